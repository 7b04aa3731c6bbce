// Shape arithmetic with overflow checks. Every element and byte count that
// comes from a client goes through these functions before anything is sized
// or allocated from it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/datatype.h"

namespace inferd {

using Shape = std::vector<int64_t>;

// Product of the dimensions; nullopt if a dimension is negative or the
// product does not fit in int64. An empty shape (a scalar) has 1 element.
std::optional<int64_t> ElementCount(std::span<const int64_t> shape);

// Byte size of a tensor of fixed-size type; nullopt on overflow, negative
// dims or a variable-size type (BYTES).
std::optional<uint64_t> ByteSize(DataType type, std::span<const int64_t> shape);

// "[1,16]"
std::string ShapeToString(std::span<const int64_t> shape);

// True if `shape` matches `dims` where -1 in dims is a wildcard.
bool ShapeMatches(std::span<const int64_t> shape, std::span<const int64_t> dims);

// a * b, nullopt on overflow (both non-negative).
std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b);
std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b);

}  // namespace inferd
