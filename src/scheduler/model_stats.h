// ModelStats: the statistics extension's counters for one model version
// (PROTOCOL.md §1.9), also the source of the Prometheus metrics.
//
// Threading: Record* are called from instance threads and front-end
// threads concurrently; counters are atomics, the per-batch-size table takes
// a short lock. Snapshot() may be called at any time and never blocks
// inference for long.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

namespace inferd {

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct BatchStat {
  DurationStat compute_input, compute_infer, compute_output;
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
};

enum class FailReason { kRejected, kCancelled, kBackend, kOther };

class ModelStats {
 public:
  void RecordSuccess(uint64_t request_ns, uint64_t queue_ns);
  void RecordFailure(FailReason reason, uint64_t request_ns);
  void RecordExecution(uint64_t batch_size, uint64_t input_ns, uint64_t infer_ns,
                       uint64_t output_ns);
  void AddPending(int64_t delta) { pending_.fetch_add(delta, std::memory_order_relaxed); }
  ModelStatsSnapshot Snapshot() const;

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
  std::atomic<uint64_t> inference_count_{0}, execution_count_{0}, last_inference_ms_{0};
  std::atomic<uint64_t> fail_rejected_{0}, fail_cancelled_{0}, fail_backend_{0}, fail_other_{0};
  std::atomic<int64_t> pending_{0};
  mutable std::mutex batch_mu_;
  std::map<uint64_t, BatchStat> batch_stats_;  // guarded by batch_mu_
};

}  // namespace inferd
