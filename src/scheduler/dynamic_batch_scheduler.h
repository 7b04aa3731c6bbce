// DynamicBatchScheduler: the scheduler for models without state. With
// batching off it runs each request alone on the next free instance; with
// `dynamic_batching` it forms batches (DecideBatch) from priority queues
// with Triton's queue policies (max queue size, timeouts with REJECT or
// DELAY, timeout override) and, if asked, preserves response order.
//
// Threading: one thread per instance; each, when free, takes the next batch
// under the queue lock and runs it outside the lock. An instance never runs
// two batches at once. Without dynamic batching, a request that finds the
// queue empty and an instance idle may instead run on the caller's thread
// (inline execution, for models whose executions are short: see
// SchedulerConfig::inline_max_exec_us); the instance is lent for that run.
// Sinks are told on instance threads, or on the caller's thread for an
// immediate rejection or an inline run. With preserve_ordering each sink is
// wrapped by the reorder buffer (ResponseOrder) at arrival, so final signals
// leave in arrival order, errors included.
// With the rate limiter (rate_limiter.h), a limited instance's thread
// acquires its resources before taking a batch and releases them after;
// such an instance is never lent for inline execution, and Stop interrupts
// its Acquire (queued requests still drain, under the limiter).
// With an automatic instance layout (SchedulerConfig::layout), only the
// instances the layout makes active take batches (all of them drain at
// Stop), each execution gets the layout's thread hint, and every execution
// is reported to it (under the queue lock); instances left out wait on a
// condition variable of their own, so wake-ups for work reach active ones.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "scheduler/adaptive_batching.h"
#include "scheduler/batch_policy.h"
#include "scheduler/batch_runner.h"
#include "scheduler/instance_layout.h"
#include "scheduler/rate_limiter.h"
#include "scheduler/response_order.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

class DynamicBatchScheduler : public Scheduler {
 public:
  // `config.kind` kNone: no batching; kDynamic: dynamic batching. Takes
  // ownership of the instances and starts one thread per instance. `stats`
  // and `clock` must outlive the scheduler. `limits`: the instances'
  // rate-limiter registrations (none: not limited), released at Stop.
  DynamicBatchScheduler(ModelIdentity model, const SchedulerConfig& config,
                        std::vector<std::unique_ptr<BackendInstance>> instances, ModelStats* stats,
                        Clock* clock, RateLimitRegistration limits = {});
  ~DynamicBatchScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override INFERD_EXCLUDES(mu_);
  void Stop() override INFERD_EXCLUDES(mu_);

 private:
  struct Level {
    QueuePolicy policy;
    std::deque<std::unique_ptr<PendingRequest>> queue;
  };
  // The state of one instance's thread.
  struct Slot {
    bool idle = false;  // its thread waits for work, the instance runs nothing
    bool lent = false;  // running a request on a caller's thread
  };
  using Failed = std::vector<std::pair<std::unique_ptr<PendingRequest>, FailReason>>;

  void InstanceLoop(size_t index) INFERD_EXCLUDES(mu_);
  // Lends an idle instance to the caller when inline execution applies and
  // returns its index; -1 otherwise. The request is not yet queued.
  int LendIdleInstanceLocked() INFERD_REQUIRES(mu_);
  // Runs `pending` on lent instance `index`, on this thread, and returns it.
  void RunInline(size_t index, std::unique_ptr<PendingRequest> pending) INFERD_EXCLUDES(mu_);
  // Records how long an execution took (for the inline decision).
  void RecordExecution(std::chrono::steady_clock::duration d);
  // Removes cancelled and timed-out requests (REJECT fails them; DELAY moves
  // them behind every other request). Appends those to fail.
  void ExpireLocked(Clock::TimePoint now, Failed& failed) INFERD_REQUIRES(mu_);
  void SweepLocked(std::deque<std::unique_ptr<PendingRequest>>& queue, const QueuePolicy* policy,
                   Clock::TimePoint now, Failed& failed) INFERD_REQUIRES(mu_);
  bool EmptyLocked() const INFERD_REQUIRES(mu_);
  size_t QueuedLocked() const INFERD_REQUIRES(mu_);
  // Instance `index` is left out by the automatic layout (never at Stop).
  bool InactiveLocked(size_t index) const INFERD_REQUIRES(mu_) {
    return layout_ && !stopping_ && !layout_->Active(index);
  }
  // Reports an execution to the layout; wakes the instances on a change.
  void LayoutEndLocked(const InstanceLayout::Run& run) INFERD_REQUIRES(mu_);
  // The queue in serving order (priority levels, 1 first, then delayed
  // requests) into `view`; returns the earliest request deadline.
  Clock::TimePoint ViewLocked(std::vector<BatchCandidate>& view) const INFERD_REQUIRES(mu_);
  // Moves the next batch (`take` requests in serving order) into `batch`.
  void TakeLocked(size_t take, std::vector<std::unique_ptr<PendingRequest>>& batch)
      INFERD_REQUIRES(mu_);

  const BatchContext ctx_;
  BatchPolicy policy_;
  DynamicBatchingConfig config_;
  std::vector<std::unique_ptr<BackendInstance>> instances_;  // fixed after construction
  const uint64_t inline_max_exec_ns_;
  // Moving average of execution times in ns; max() until the first one.
  std::atomic<uint64_t> avg_exec_ns_{UINT64_MAX};
  // preserve_ordering: final signals held until every earlier one has left.
  std::shared_ptr<ResponseOrder> ordering_;  // null without; fixed after construction
  RateLimitRegistration limits_;             // fixed until Stop resets it after the joins
  std::shared_ptr<InstanceLayout> layout_;   // null: no automatic layout; fixed after construction
  // Adaptive batching (null: classic); used under mu_ only.
  std::unique_ptr<AdaptiveBatcher> adaptive_ INFERD_PT_GUARDED_BY(mu_);

  Mutex mu_;
  CondVar cv_;
  CondVar layout_cv_;  // instances the automatic layout leaves out wait here

  std::vector<Slot> slots_ INFERD_GUARDED_BY(mu_);           // one per instance
  std::map<uint64_t, Level> levels_ INFERD_GUARDED_BY(mu_);  // 1 = highest priority
  std::deque<std::unique_ptr<PendingRequest>> delayed_ INFERD_GUARDED_BY(mu_);
  bool stopping_ INFERD_GUARDED_BY(mu_) = false;
  int inline_runs_ INFERD_GUARDED_BY(mu_) = 0;  // Stop waits for them
  std::vector<std::thread> threads_;
};

// Signature of a request's non-batch shapes and datatypes: requests batch
// together only when their signatures are equal.
std::string BatchSignature(const InferRequest& request, bool batching);

}  // namespace inferd
