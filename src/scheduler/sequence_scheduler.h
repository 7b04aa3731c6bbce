// SequenceScheduler: the scheduler for stateful models (sequence_batching).
//
// Every sequence (correlation id) is pinned at its START to one instance
// (the one with the fewest live sequences), so all its requests run there,
// in order. Each execution on an instance takes at most one request per
// sequence, up to max_batch_size, oldest first, waiting at most the
// strategy's max_queue_delay to fill a batch. The server delivers the
// configured control inputs (START, END, READY, CORRID) as extra input
// tensors of each request. A sequence idle for max_sequence_idle_us is
// released; its next request must START again.
//
// The two strategies share this machinery: `direct` forms batches as they
// come; `oldest` also honours preferred batch sizes.
//
// Threading: one thread per instance; Enqueue from any thread, never blocks.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/batch_policy.h"
#include "scheduler/batch_runner.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

class SequenceScheduler : public Scheduler {
 public:
  SequenceScheduler(ModelIdentity model, const SchedulerConfig& config,
                    std::vector<std::unique_ptr<BackendInstance>> instances, ModelStats* stats,
                    Clock* clock);
  ~SequenceScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override;
  void Stop() override;

 private:
  struct Slot {
    std::deque<std::unique_ptr<PendingRequest>> queue;
    size_t live_sequences = 0;
  };
  struct SequenceState {
    size_t slot = 0;
    Clock::TimePoint last_seen;
  };

  void InstanceLoop(size_t index);
  void ReleaseIdleLocked(Clock::TimePoint now);
  Status AddControlInputs(InferRequest& request, bool start, bool end) const;
  static std::string Key(const CorrelationId& id);

  const BatchContext ctx_;
  const SchedulerConfig config_;
  BatchPolicy policy_;
  bool string_ids_ = false;  // CORRID control is TYPE_STRING
  std::vector<std::unique_ptr<BackendInstance>> instances_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slot> slots_;  // guarded by mu_; one per instance (deque: Slot is move-only)
  std::map<std::string, SequenceState> sequences_;  // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace inferd
