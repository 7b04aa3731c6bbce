#include "server/inflight_tracker.h"

#include <chrono>

namespace inferd {

class InflightTracker::CountingSink final : public ForwardingSink {
 public:
  CountingSink(InflightTracker* tracker, std::unique_ptr<InferResponseSink> inner)
      : ForwardingSink(std::move(inner)), tracker_(tracker) {}

  ~CountingSink() override {
    if (!done()) Finish(Internal("the server dropped the request without a final response"));
  }

 private:
  // After the front end's sink went: only then may the count say idle.
  void OnFinal() override { tracker_->Done(); }

  InflightTracker* const tracker_;
};

std::unique_ptr<InferResponseSink> InflightTracker::Track(std::unique_ptr<InferResponseSink> sink) {
  count_.fetch_add(1, std::memory_order_relaxed);
  return std::make_unique<CountingSink>(this, std::move(sink));
}

void InflightTracker::Done() {
  if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    MutexLock lock(mu_);
    idle_.NotifyAll();
  }
}

bool InflightTracker::WaitForIdle(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(mu_);
  while (count() != 0) {
    if (!idle_.WaitUntil(lock, deadline)) return count() == 0;
  }
  return true;
}

}  // namespace inferd
