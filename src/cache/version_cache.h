// VersionCache: the response cache as one model version uses it, called by
// ModelVersion::Enqueue before the scheduler (so direct, dynamic-batching
// and ensemble models are covered alike).
//
// A request is looked up unless it carries a correlation id or an input in
// GPU memory (then it goes to the scheduler untouched: neither hit nor
// miss). A hit is answered at once on the caller's thread with a copy of
// the cached response (the request's id set), without reaching the
// scheduler. A miss goes to the scheduler with its sink wrapped: a
// successful final response is inserted into the cache on its way to the
// client; a failed one is not.
//
// Statistics (PROTOCOL-NEXT §8.1): a hit counts as a success (and in
// `queue`, with no queue time) and in `cache_hit` (lookup + copy time), not
// in inference/execution counts; a miss counts in `cache_miss` (lookup +
// insert time) once its answer is known.
//
// Ownership: owned by its ModelVersion; shares the server's cache; the
// stats and clock outlive it (the version's). Threading: Serve is called
// concurrently from front-end threads; the wrapped sinks run on instance
// threads.
#pragma once

#include <memory>
#include <string>

#include "cache/response_cache.h"
#include "core/infer_request.h"
#include "core/response_sink.h"
#include "scheduler/clock.h"
#include "scheduler/model_stats.h"

namespace inferd {

class VersionCache {
 public:
  VersionCache(std::shared_ptr<ResponseCache> cache, std::string model, int64_t version,
               ModelStats* stats, Clock* clock);

  // True when the request was answered from the cache (request and sink are
  // consumed); false when it must be scheduled, `sink` then possibly
  // wrapped to insert the answer.
  bool Serve(std::unique_ptr<InferRequest>& request, std::unique_ptr<InferResponseSink>& sink);

 private:
  std::shared_ptr<ResponseCache> cache_;
  const std::string model_;
  const int64_t version_;
  const uint64_t load_id_;  // distinct per VersionCache (per load): cache_key.h
  ModelStats* const stats_;
  Clock* const clock_;
};

}  // namespace inferd
