// libFuzzer target: a serialised BYTES tensor (4-byte little-endian length
// prefixes), counted and split as the validator and backends do; the two
// must agree, and every element must lie inside the buffer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/bytes_tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  const char* p = reinterpret_cast<const char*>(data);
  auto count = CountBytesElements(p, size);
  auto parts = SplitBytesElements(p, size);
  if (count.ok() != parts.ok()) std::abort();
  if (!count.ok()) return 0;
  if (static_cast<size_t>(*count) != parts->size()) std::abort();
  for (const auto& e : *parts) {
    if (e.data() < p || e.data() + e.size() > p + size) std::abort();
  }
  return 0;
}
