// BYTES tensors: each element is a 4-byte little-endian length followed by
// that many bytes, elements concatenated without padding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace inferd {

// Counts the elements of a serialised BYTES buffer; an error if a length
// prefix or element runs past the end.
StatusOr<int64_t> CountBytesElements(const char* data, size_t size);

// Splits a serialised BYTES buffer into views of its elements (no copies).
StatusOr<std::vector<std::string_view>> SplitBytesElements(const char* data, size_t size);

// Appends one length-prefixed element to `out`.
void AppendBytesElement(std::string& out, std::string_view element);

}  // namespace inferd
