#include "core/shape.h"

#include <limits>

namespace inferd {

std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> ElementCount(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::optional<uint64_t> ByteSize(DataType type, std::span<const int64_t> shape) {
  const size_t element = DataTypeByteSize(type);
  if (element == 0) return std::nullopt;
  auto n = ElementCount(shape);
  if (!n) return std::nullopt;
  return CheckedMul(static_cast<uint64_t>(*n), element);
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool ShapeMatches(std::span<const int64_t> shape, std::span<const int64_t> dims) {
  if (shape.size() != dims.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (dims[i] != -1 && dims[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace inferd
