#include "server/inflight_tracker.h"

#include <chrono>

namespace inferd {

class InflightTracker::CountingSink final : public InferResponseSink {
 public:
  CountingSink(InflightTracker* tracker, std::unique_ptr<InferResponseSink> inner)
      : tracker_(tracker), inner_(std::move(inner)) {}

  ~CountingSink() override {
    if (!done_) Finish(Internal("the server dropped the request without a final response"));
  }

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (done_) return;
    inner_->Send(std::move(response), final);
    if (final) Close();
  }

  void Finish(Status status) override {
    if (done_) return;
    inner_->Finish(std::move(status));
    Close();
  }

 private:
  void Close() {
    done_ = true;
    // The front end's sink may hold a connection: let it go before the
    // count says the server is idle.
    inner_.reset();
    tracker_->Done();
  }

  InflightTracker* const tracker_;
  std::unique_ptr<InferResponseSink> inner_;
  bool done_ = false;
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
