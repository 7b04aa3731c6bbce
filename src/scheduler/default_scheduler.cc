#include "scheduler/default_scheduler.h"

namespace inferd {

DefaultScheduler::DefaultScheduler(ModelIdentity model,
                                   std::vector<std::unique_ptr<BackendInstance>> instances)
    : model_(std::move(model)), instances_(std::move(instances)) {
  for (auto& inst : instances_) {
    threads_.emplace_back([this, i = inst.get()] { InstanceLoop(i); });
  }
}

DefaultScheduler::~DefaultScheduler() { Stop(); }

void DefaultScheduler::Enqueue(std::unique_ptr<PendingRequest> pending) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(pending));
      cv_.notify_one();
      return;
    }
  }
  pending->completion(Unavailable("model '" + model_.name + "' version " +
                                  std::to_string(model_.version) + " is unloading"),
                      nullptr);
}

void DefaultScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void DefaultScheduler::InstanceLoop(BackendInstance* instance) {
  std::vector<std::unique_ptr<PendingRequest>> batch;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    RunBatch(model_, *instance, batch);
  }
}

}  // namespace inferd
