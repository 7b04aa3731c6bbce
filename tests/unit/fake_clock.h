// FakeClock: a Clock that only moves when the test advances it. Threads
// waiting in WaitUntil wake when the time passes their deadline.
#pragma once

#include <mutex>
#include <set>

#include "scheduler/clock.h"

namespace inferd::testing {

class FakeClock : public Clock {
 public:
  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (deadline <= now_) return;
      waiters_.insert({lock.mutex(), &cv});
    }
    cv.wait(lock);
    std::lock_guard<std::mutex> g(mu_);
    waiters_.erase({lock.mutex(), &cv});
  }

  void Advance(std::chrono::microseconds d) {
    std::set<std::pair<std::mutex*, std::condition_variable*>> waiters;
    {
      std::lock_guard<std::mutex> g(mu_);
      now_ += d;
      waiters = waiters_;
    }
    // Taking each waiter's mutex orders the notify after its wait began.
    for (auto [m, cv] : waiters) {
      std::lock_guard<std::mutex> g(*m);
      cv->notify_all();
    }
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::seconds(1000)};
  std::set<std::pair<std::mutex*, std::condition_variable*>> waiters_;
};

}  // namespace inferd::testing
