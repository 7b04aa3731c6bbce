// InflightTracker: counts the inference requests the server has accepted
// and not yet finished, so that shutdown can wait until they are answered.
//
// Track() wraps a request's sink in a decorator that counts the request in
// at once and out on its final signal (Send(..., true) or Finish), after
// the inner sink has taken it, so "idle" means every response was handed to
// its front end. If the decorator is destroyed without a final signal (a
// producer bug), it finishes the inner sink with INTERNAL and counts out:
// no client waits forever and WaitForIdle cannot hang on it.
//
// Ownership: the decorator owns the inner sink and points at the tracker,
// which must outlive every decorator (InferenceServer drains its models
// before it goes).
//
// Threading: every method may be called from any thread; the decorator
// follows the sink contract (core/response_sink.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/response_sink.h"
#include "core/thread_annotations.h"

namespace inferd {

class InflightTracker {
 public:
  InflightTracker() = default;
  InflightTracker(const InflightTracker&) = delete;
  InflightTracker& operator=(const InflightTracker&) = delete;

  // Counts one request in and returns its sink, which counts it out.
  std::unique_ptr<InferResponseSink> Track(std::unique_ptr<InferResponseSink> sink);

  int64_t count() const { return count_.load(std::memory_order_acquire); }

  // Blocks until no request is in flight or `timeout_ms` passes; true if
  // idle.
  bool WaitForIdle(int timeout_ms) INFERD_EXCLUDES(mu_);

 private:
  class CountingSink;
  void Done() INFERD_EXCLUDES(mu_);

  std::atomic<int64_t> count_{0};
  Mutex mu_;  // orders the idle notification after a waiter's check
  CondVar idle_;
};

}  // namespace inferd
