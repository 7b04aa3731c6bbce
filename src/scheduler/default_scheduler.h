// DefaultScheduler: no batching; each request executes alone on the next
// free instance. One thread per instance pulls from a shared FIFO, so an
// instance never runs two executions at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/batch_runner.h"
#include "scheduler/scheduler.h"

namespace inferd {

class DefaultScheduler : public Scheduler {
 public:
  // Takes ownership of the instances; starts one thread per instance.
  DefaultScheduler(ModelIdentity model, std::vector<std::unique_ptr<BackendInstance>> instances);
  ~DefaultScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override;
  void Stop() override;

 private:
  void InstanceLoop(BackendInstance* instance);

  const ModelIdentity model_;
  std::vector<std::unique_ptr<BackendInstance>> instances_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<PendingRequest>> queue_;  // guarded by mu_
  bool stopping_ = false;                              // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace inferd
