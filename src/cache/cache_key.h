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
// A key built for a lookup does not copy large input data: it points into
// the request (which must outlive it) until Flatten() makes the owned form
// an entry keeps.
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/infer_request.h"
#include "core/status.h"

namespace inferd {

class CacheKey {
 public:
  CacheKey() = default;
  // A key whose serialisation is `flat` (an owned key; tests), with `hash`.
  CacheKey(std::string flat, uint64_t hash) : meta_(std::move(flat)), hash_(hash) {}

  uint64_t hash() const { return hash_; }
  size_t size() const;  // bytes of the serialisation
  // Whether this key's serialisation is exactly `flat`.
  bool Equals(std::string_view flat) const;
  // The serialisation, owned (what a cache entry stores).
  std::string Flatten() const;

 private:
  friend class CacheKeyBuilder;
  // The serialisation is meta_[0, pieces[0].meta_end) + pieces[0].data +
  // meta_[pieces[0].meta_end, pieces[1].meta_end) + ... + the rest of meta_.
  struct Piece {
    size_t meta_end = 0;
    std::string_view data;  // large input data, not copied
  };
  std::string meta_;
  std::vector<Piece> pieces_;
  uint64_t hash_ = 0;
};

// The key of `request` for version `version` of model `model`, loaded as
// `load_id` (distinct for every load of a version, so that a model reloaded
// with new files under the same version number never answers from its
// previous files' entries). FAILED_PRECONDITION when an input is not in CPU
// memory (GPU shared memory): such a request is not cached.
StatusOr<CacheKey> BuildCacheKey(std::string_view model, int64_t version,
                                 const InferRequest& request, uint64_t load_id = 0);

}  // namespace inferd
