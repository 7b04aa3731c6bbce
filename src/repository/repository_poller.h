// RepositoryPoller: the poll mode's thread. Runs `pass` (the manager's
// PollOnce) every `interval`, waiting through the injected Clock, so a test
// drives it with a fake clock instead of sleeping. The interval counts from
// the end of one pass to the start of the next; the first pass runs one
// interval after construction.
//
// Threading: the thread starts in the constructor and is joined by Stop()
// or the destructor; a pass in progress finishes first. Passes never
// overlap. AwaitPass may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "core/thread_annotations.h"
#include "scheduler/clock.h"

namespace inferd {

class RepositoryPoller {
 public:
  // `clock` is not owned and must outlive the poller; `interval` > 0.
  RepositoryPoller(Clock* clock, std::chrono::microseconds interval, std::function<void()> pass);
  ~RepositoryPoller();
  RepositoryPoller(const RepositoryPoller&) = delete;
  RepositoryPoller& operator=(const RepositoryPoller&) = delete;

  // Stops the thread (after the pass in progress). Idempotent; not to be
  // called from `pass`.
  void Stop() INFERD_EXCLUDES(mu_);

  // Blocks until more than `seen` passes have completed, or the poller
  // stopped; returns the number completed. Lets a caller (a test) know that
  // a change was looked at without sleeping.
  uint64_t AwaitPass(uint64_t seen) INFERD_EXCLUDES(mu_);

 private:
  void Loop() INFERD_EXCLUDES(mu_);

  Clock* const clock_;
  const std::chrono::microseconds interval_;
  const std::function<void()> pass_;

  Mutex mu_;
  CondVar wake_;    // the loop's wait: stop, or the clock reaching next_
  CondVar passed_;  // AwaitPass's wait
  bool stop_ INFERD_GUARDED_BY(mu_) = false;
  uint64_t passes_ INFERD_GUARDED_BY(mu_) = 0;
  Clock::TimePoint next_ INFERD_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace inferd
