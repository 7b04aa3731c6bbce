// ModelStats: the statistics extension's counters for one model version
// (PROTOCOL.md §1.9), also the source of the Prometheus metrics.
//
// Threading: Record* are called from instance threads and front-end
// threads concurrently; counters are atomics, the per-batch-size table takes
// a short lock. Snapshot() may be called at any time and never blocks
// inference for long. The histograms (metrics) are atomic bucket arrays,
// configured once before the first Record*.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/thread_annotations.h"

namespace inferd {

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct BatchStat {
  DurationStat compute_input, compute_infer, compute_output;
};

// A histogram read at one moment: `counts[i]` observations with value <=
// `bounds[i]` and > `bounds[i-1]` (not cumulative); the last count is the
// overflow (+Inf) bucket, so counts.size() == bounds.size() + 1. Values are
// in the unit observed (nanoseconds for latencies, rows for batch sizes).
// Empty when the histogram is not configured.
struct HistogramSnapshot {
  std::vector<uint64_t> bounds;
  std::vector<uint64_t> counts;
  uint64_t sum = 0;
  uint64_t Count() const;
};

// Upper bounds of the latency histograms, in seconds, strictly ascending
// (whole nanoseconds). The defaults span 50 us to 10 s.
struct StatsHistogramOptions {
  std::vector<double> latency_buckets_s = DefaultLatencyBuckets();
  static std::vector<double> DefaultLatencyBuckets();
};

// A fixed set of buckets with lock-free observation.
class AtomicHistogram {
 public:
  // Sets the bucket upper bounds (ascending); must not race with Observe.
  void Configure(std::vector<uint64_t> bounds);
  // Counts `value` in the first bucket whose bound is >= value. A no-op
  // until configured. Relaxed atomics only.
  void Observe(uint64_t value) {
    if (!counts_) return;
    size_t i = 0;
    while (i < bounds_.size() && bounds_[i] < value) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }
  HistogramSnapshot Get() const;

 private:
  std::vector<uint64_t> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<uint64_t> sum_{0};
};

struct ModelStatsSnapshot {
  uint64_t last_inference_ms = 0;
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  DurationStat success, fail, queue, compute_input, compute_infer, compute_output;
  std::map<uint64_t, BatchStat> batch_stats;
  // Failures by reason (metrics): rejected by the queue policy, cancelled,
  // failed by the backend, other.
  uint64_t fail_rejected = 0, fail_cancelled = 0, fail_backend = 0, fail_other = 0;
  int64_t pending = 0;  // accepted, not yet started
  // Accepted, final response not yet sent (queued or executing; the status
  // page's in-flight): counted by ModelVersion::Enqueue's sink decorator.
  int64_t inflight = 0;
  // Response cache (cache/version_cache.h): lookups answered from it
  // (lookup + copy time) and lookups that missed (lookup + insert time);
  // `response_cache` when the version caches (its nv_cache_* metrics).
  DurationStat cache_hit, cache_miss;
  bool response_cache = false;
  // Histograms (empty unless ConfigureHistograms was called): end-to-end
  // and queue time of successful requests, ns; model execution time per
  // execution, ns; rows per execution.
  HistogramSnapshot request_hist, queue_hist, compute_infer_hist, batch_size_hist;
  // Adaptive batching's chosen batch size (scheduler/adaptive_batching.h);
  // 0 when the version does not batch adaptively.
  int64_t batch_target = 0;
};

enum class FailReason { kRejected, kCancelled, kBackend, kOther };

class ModelStats {
 public:
  void RecordSuccess(uint64_t request_ns, uint64_t queue_ns);
  void RecordFailure(FailReason reason, uint64_t request_ns);
  void RecordExecution(uint64_t batch_size, uint64_t input_ns, uint64_t infer_ns,
                       uint64_t output_ns) INFERD_EXCLUDES(batch_mu_);
  void AddPending(int64_t delta) { pending_.fetch_add(delta, std::memory_order_relaxed); }
  // The in-flight count, shared with the sink decorators that count a
  // request in and out (they may outlive the version: a final signal after
  // an unload still finds the counter).
  const std::shared_ptr<std::atomic<int64_t>>& inflight_counter() const { return inflight_; }
  void RecordCacheHit(uint64_t ns) { cache_hit_.Add(ns); }
  void RecordCacheMiss(uint64_t ns) { cache_miss_.Add(ns); }
  // Marks the version as caching (before the first request).
  void EnableCacheStats() { response_cache_.store(true, std::memory_order_relaxed); }
  // Adaptive batching publishes its choice (the inferd_batch_target_size gauge).
  void SetBatchTarget(int64_t rows) { batch_target_.store(rows, std::memory_order_relaxed); }
  ModelStatsSnapshot Snapshot() const INFERD_EXCLUDES(batch_mu_);

  // Turns the histograms on: latency buckets from `options`, batch-size
  // buckets 1, 2, 4, ... up to the first power of two >= max_batch_size.
  // Call once, before the first Record* (before the scheduler starts).
  void ConfigureHistograms(const StatsHistogramOptions& options, int64_t max_batch_size);

 private:
  struct AtomicDuration {
    std::atomic<uint64_t> count{0}, ns{0};
    void Add(uint64_t n) {
      count.fetch_add(1, std::memory_order_relaxed);
      ns.fetch_add(n, std::memory_order_relaxed);
    }
    DurationStat Get() const { return {count.load(), ns.load()}; }
  };
  AtomicDuration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;
  AtomicDuration cache_hit_, cache_miss_;
  std::atomic<bool> response_cache_{false};
  std::atomic<uint64_t> inference_count_{0}, execution_count_{0}, last_inference_ms_{0};
  std::atomic<uint64_t> fail_rejected_{0}, fail_cancelled_{0}, fail_backend_{0}, fail_other_{0};
  std::atomic<int64_t> pending_{0};
  const std::shared_ptr<std::atomic<int64_t>> inflight_ = std::make_shared<std::atomic<int64_t>>(0);
  std::atomic<int64_t> batch_target_{0};
  AtomicHistogram request_hist_, queue_hist_, compute_infer_hist_, batch_size_hist_;
  mutable Mutex batch_mu_;
  std::map<uint64_t, BatchStat> batch_stats_ INFERD_GUARDED_BY(batch_mu_);
};

}  // namespace inferd
