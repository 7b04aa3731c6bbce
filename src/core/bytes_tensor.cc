#include "core/bytes_tensor.h"

#include <cstring>

namespace inferd {
namespace {

template <typename Fn>
Status WalkElements(const char* data, size_t size, Fn&& fn) {
  size_t pos = 0;
  while (pos < size) {
    if (size - pos < 4) {
      return InvalidArgument("BYTES element length prefix at byte " + std::to_string(pos) +
                             " is truncated");
    }
    uint32_t len;
    std::memcpy(&len, data + pos, 4);  // little-endian hosts only (x86-64, aarch64)
    pos += 4;
    if (len > size - pos) {
      return InvalidArgument("BYTES element at byte " + std::to_string(pos - 4) + " declares " +
                             std::to_string(len) + " bytes but only " + std::to_string(size - pos) +
                             " remain");
    }
    fn(std::string_view(data + pos, len));
    pos += len;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<int64_t> CountBytesElements(const char* data, size_t size) {
  int64_t n = 0;
  Status s = WalkElements(data, size, [&](std::string_view) { ++n; });
  if (!s.ok()) return s;
  return n;
}

StatusOr<std::vector<std::string_view>> SplitBytesElements(const char* data, size_t size) {
  std::vector<std::string_view> out;
  Status s = WalkElements(data, size, [&](std::string_view e) { out.push_back(e); });
  if (!s.ok()) return s;
  return out;
}

void AppendBytesElement(std::string& out, std::string_view element) {
  const uint32_t len = static_cast<uint32_t>(element.size());
  char prefix[4];
  std::memcpy(prefix, &len, 4);
  out.append(prefix, 4);
  out.append(element);
}

}  // namespace inferd
