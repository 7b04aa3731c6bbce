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
// Completions run on instance threads, or on the caller's thread for an
// immediate rejection or an inline run.
#pragma once

#include <atomic>
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

class DynamicBatchScheduler : public Scheduler {
 public:
  // `config.kind` kNone: no batching; kDynamic: dynamic batching. Takes
  // ownership of the instances and starts one thread per instance. `stats`
  // and `clock` must outlive the scheduler.
  DynamicBatchScheduler(ModelIdentity model, const SchedulerConfig& config,
                        std::vector<std::unique_ptr<BackendInstance>> instances, ModelStats* stats,
                        Clock* clock);
  ~DynamicBatchScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override;
  void Stop() override;

 private:
  struct Level {
    QueuePolicy policy;
    std::deque<std::unique_ptr<PendingRequest>> queue;
  };

  // An instance and the state of its thread, guarded by mu_.
  struct Slot {
    BackendInstance* instance = nullptr;
    bool idle = false;  // its thread waits for work, the instance runs nothing
    bool lent = false;  // running a request on a caller's thread
  };

  void InstanceLoop(Slot* slot);
  // Lends an idle instance to the caller when inline execution applies;
  // nullptr otherwise. Called under mu_ with the request not yet queued.
  Slot* LendIdleInstanceLocked();
  // Runs `pending` on a lent instance, on this thread, and returns it.
  void RunInline(Slot* slot, std::unique_ptr<PendingRequest> pending);
  // Records how long an execution took (for the inline decision).
  void RecordExecution(std::chrono::steady_clock::duration d);
  // Removes cancelled and timed-out requests (REJECT fails them; DELAY moves
  // them behind every other request). Returns those to fail.
  void ExpireLocked(Clock::TimePoint now,
                    std::vector<std::pair<std::unique_ptr<PendingRequest>, FailReason>>& failed);
  // Wraps a completion so responses leave in arrival order.
  void WrapForOrdering(PendingRequest& pending);
  bool EmptyLocked() const;

  const BatchContext ctx_;
  BatchPolicy policy_;
  DynamicBatchingConfig config_;
  std::vector<std::unique_ptr<BackendInstance>> instances_;
  std::vector<Slot> slots_;  // one per instance; fixed after construction
  const uint64_t inline_max_exec_ns_;
  // Moving average of execution times in ns; max() until the first one.
  std::atomic<uint64_t> avg_exec_ns_{UINT64_MAX};

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Level> levels_;                     // guarded by mu_; 1 = highest
  std::deque<std::unique_ptr<PendingRequest>> delayed_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  int inline_runs_ = 0;                                  // guarded by mu_; Stop waits for them
  uint64_t next_sequence_ = 0;                           // guarded by mu_
  std::vector<std::thread> threads_;

  // preserve_ordering: responses held until every earlier one has left.
  struct Ordering;
  std::shared_ptr<Ordering> ordering_;
};

// Signature of a request's non-batch shapes and datatypes: requests batch
// together only when their signatures are equal.
std::string BatchSignature(const InferRequest& request, bool batching);

}  // namespace inferd
