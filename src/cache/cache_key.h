// CacheKey: the exact identity of an inference request for the response
// cache (docs/response_cache.md).
//
// Unlike Triton's 64-bit hash of names and bytes, inferd's key is the whole
// request serialised without ambiguity (every variable-length field is
// length-prefixed): model name, the actual version, every input sorted by
// name with its datatype, shape and data bytes, the requested outputs in
// request order with their classification counts, and the request
// parameters left after validation (those reach the backend). Two requests
// have equal keys exactly when they would make the model compute the same
// thing, so a lookup compares the bytes in full and never returns another
// request's answer; the 64-bit hash only places the key in the table.
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/infer_request.h"
#include "core/status.h"

namespace inferd {

struct CacheKey {
  std::string bytes;  // the serialised request
  uint64_t hash = 0;  // of `bytes`
};

// The key of `request` for version `version` of model `model`.
// FAILED_PRECONDITION when an input is not in CPU memory (GPU shared
// memory): such a request is not cached.
StatusOr<CacheKey> BuildCacheKey(std::string_view model, int64_t version,
                                 const InferRequest& request);

}  // namespace inferd
