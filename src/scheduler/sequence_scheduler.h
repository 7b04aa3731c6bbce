// SequenceScheduler: the scheduler for stateful models (sequence_batching).
//
// Every sequence (correlation id) is pinned at its START to one instance
// (the one with the fewest live sequences), so all its requests run there,
// in order. Each execution on an instance takes at most one request per
// sequence, up to max_batch_size, oldest first, waiting at most the
// strategy's max_queue_delay to fill a batch. The server delivers the
// configured control inputs (START, END, READY, CORRID) as extra input
// tensors of each request, and keeps the implicit state of each sequence
// (sequence_state.h). A sequence idle for max_sequence_idle_us is
// released; its next request must START again.
//
// The two strategies share this machinery: `direct` forms batches as they
// come; `oldest` also honours preferred batch sizes.
//
// Threading: one thread per instance; Enqueue from any thread, never blocks.
// A request refused at Enqueue (no correlation id, no START, unloading) has
// its sink finished on the caller's thread; every other sink is told on the
// sequence's instance thread, so one sequence's responses leave in order.
// With the rate limiter (rate_limiter.h), a limited instance's thread
// acquires its resources before taking a batch and releases them after, as
// in DynamicBatchScheduler.
#pragma once

#include <deque>
#include <map>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "scheduler/batch_policy.h"
#include "scheduler/batch_runner.h"
#include "scheduler/rate_limiter.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"
#include "scheduler/sequence_state.h"

namespace inferd {

class SequenceScheduler : public Scheduler {
 public:
  SequenceScheduler(ModelIdentity model, const SchedulerConfig& config,
                    std::vector<std::unique_ptr<BackendInstance>> instances, ModelStats* stats,
                    Clock* clock, RateLimitRegistration limits = {});
  ~SequenceScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override INFERD_EXCLUDES(mu_);
  void Stop() override INFERD_EXCLUDES(mu_);

 private:
  struct Slot {
    std::deque<std::unique_ptr<PendingRequest>> queue;
    size_t live_sequences = 0;
  };
  struct SequenceState {
    size_t slot = 0;
    Clock::TimePoint last_seen;
    std::shared_ptr<SequenceStateStore> store;  // implicit state; null without states
  };

  void InstanceLoop(size_t index) INFERD_EXCLUDES(mu_);
  void ReleaseIdleLocked(Clock::TimePoint now) INFERD_REQUIRES(mu_);
  // Moves the queue's cancelled requests into `cancelled`.
  void TakeCancelledLocked(std::deque<std::unique_ptr<PendingRequest>>& queue,
                           std::vector<std::unique_ptr<PendingRequest>>& cancelled)
      INFERD_REQUIRES(mu_);
  Status AddControlInputs(InferRequest& request, bool start, bool end) const;
  static std::string Key(const CorrelationId& id);

  const BatchContext ctx_;
  const SchedulerConfig config_;
  BatchPolicy policy_;
  // The CORRID control, if any: it fixes the correlation id's type (a
  // model without one takes integers and strings alike, as Triton does).
  const ControlInputConfig* corrid_ = nullptr;
  SequenceStateStore::States states_;  // sequence_batching.state; null when none
  std::vector<std::unique_ptr<BackendInstance>> instances_;
  RateLimitRegistration limits_;  // fixed until Stop resets it after the joins

  Mutex mu_;
  CondVar cv_;
  // One per instance (deque: Slot is move-only).
  std::deque<Slot> slots_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, SequenceState> sequences_ INFERD_GUARDED_BY(mu_);
  bool stopping_ INFERD_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace inferd
