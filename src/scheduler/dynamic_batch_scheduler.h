// DynamicBatchScheduler: the scheduler for models without state. With
// batching off it runs each request alone on the next free instance; with
// `dynamic_batching` it forms batches (DecideBatch) from priority queues
// with Triton's queue policies (max queue size, timeouts with REJECT or
// DELAY, timeout override) and, if asked, preserves response order.
//
// Threading: one thread per instance; each, when free, takes the next batch
// under the queue lock and runs it outside the lock. An instance never runs
// two batches at once. Completions run on instance threads, or on the
// caller's thread for an immediate rejection.
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

  void InstanceLoop(BackendInstance* instance);
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

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Level> levels_;                     // guarded by mu_; 1 = highest
  std::deque<std::unique_ptr<PendingRequest>> delayed_;  // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
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
