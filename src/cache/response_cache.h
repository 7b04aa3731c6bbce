// ResponseCache: the server-wide response cache (--cache-config
// local,size=N): successful responses of models with
// `response_cache { enable: true }`, keyed by the exact request
// (cache_key.h), evicted least-recently-used when the bytes they take
// exceed the capacity. docs/response_cache.md.
//
// An entry's size is its key's bytes plus its outputs' bytes plus a fixed
// overhead per entry and per tensor (names, shapes, bookkeeping), so the
// capacity bounds what the cache holds. An entry larger than the whole
// capacity is not inserted.
//
// Ownership: shared (shared_ptr) by the server and every model version that
// caches; entries hold their responses by shared_ptr, and a hit's response
// shares the entry's output bytes (OwnedBuffer::Shared), so an eviction never
// frees bytes a response still points at.
//
// Threading: every method is thread-safe; one mutex guards the table and
// the recency list, held only for the table operations (no tensor bytes are
// copied under it).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/cache_key.h"
#include "core/infer_request.h"
#include "core/status.h"
#include "core/thread_annotations.h"

namespace inferd {

struct ResponseCacheStats {
  uint64_t capacity_bytes = 0;
  uint64_t bytes = 0;    // what the entries take now
  uint64_t entries = 0;  // now
  uint64_t lookups = 0, hits = 0, misses = 0;
  uint64_t inserts = 0;
  uint64_t evictions = 0;  // entries removed to make room
  uint64_t too_large = 0;  // responses not inserted: larger than the capacity
};

class ResponseCache {
 public:
  explicit ResponseCache(uint64_t capacity_bytes);

  // The response cached under `key` (its id is left as cached; the caller
  // sets the request's), made most recently used; null on a miss. Its
  // outputs share the entry's bytes (read-only, kept alive by the returned
  // response even after an eviction): a hit copies no tensor data.
  std::unique_ptr<InferResponse> Lookup(const CacheKey& key) INFERD_EXCLUDES(mu_);

  // Stores a copy of `response` under `key` (replacing an equal key's),
  // evicting least recently used entries until it fits. False when it is
  // larger than the capacity (nothing changes).
  bool Insert(const CacheKey& key, const InferResponse& response) INFERD_EXCLUDES(mu_);

  ResponseCacheStats Stats() const INFERD_EXCLUDES(mu_);
  uint64_t capacity_bytes() const { return capacity_; }

  // What an entry of `key` and `response` counts against the capacity.
  static uint64_t EntrySize(const CacheKey& key, const InferResponse& response);

 private:
  struct Entry {
    std::string key;
    uint64_t hash = 0;
    uint64_t size = 0;
    std::shared_ptr<const InferResponse> response;
  };
  using List = std::list<Entry>;
  // hash -> the entries with that hash (list nodes never move); a lookup
  // compares the key bytes of each in full.
  using Table = std::unordered_multimap<uint64_t, List::iterator>;

  Table::iterator FindLocked(const CacheKey& key) INFERD_REQUIRES(mu_);
  void EraseLocked(Table::iterator it) INFERD_REQUIRES(mu_);

  const uint64_t capacity_;
  mutable Mutex mu_;
  List lru_ INFERD_GUARDED_BY(mu_);  // front: most recently used
  Table table_ INFERD_GUARDED_BY(mu_);
  ResponseCacheStats stats_ INFERD_GUARDED_BY(mu_);
};

// A deep copy of `response` (outputs' bytes included).
std::unique_ptr<InferResponse> CloneResponse(const InferResponse& response);
// A response equal to `response` whose outputs share its bytes.
std::unique_ptr<InferResponse> ShareResponse(const std::shared_ptr<const InferResponse>& response);

// The cache's capacity from --cache-config values (each "<cache>,<key>=<value>",
// repeatable; only the "local" cache, key "size", bytes) and the deprecated
// --response-cache-byte-size (`byte_size`, -1 when not given). 0: no cache.
// Errors are INVALID_ARGUMENT, Triton's text when both flags are given.
StatusOr<uint64_t> ResponseCacheCapacity(const std::vector<std::string>& cache_config,
                                         int64_t byte_size);

}  // namespace inferd
