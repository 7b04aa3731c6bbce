// Clock: the time source of the schedulers, injected so that tests drive
// batching and timeouts with a fake clock instead of sleeping.
//
// Threading: Now() and WaitUntil() are called concurrently from scheduler
// threads; implementations must be thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace inferd {

// Nanoseconds from `a` to `b`; 0 when `b` is not after `a` (statistics
// never go negative when a fake clock stands still).
inline uint64_t ElapsedNs(std::chrono::steady_clock::time_point a,
                          std::chrono::steady_clock::time_point b) {
  return b > a ? static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count())
               : 0;
}

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // Waits on `cv` (with `lock` held on entry and exit) until notified or
  // until Now() >= deadline. Spurious returns are allowed; callers re-check.
  // Annotated callers pass MutexLock::native() and CondVar::native(): to the
  // thread-safety analysis the lock stays held across the call, as it is
  // on entry and exit.
  virtual void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         TimePoint deadline) = 0;
};

class RealClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 TimePoint deadline) override {
    if (deadline == TimePoint::max()) {
      cv.wait(lock);
    } else {
      cv.wait_until(lock, deadline);
    }
  }
  // A process-wide instance (stateless).
  static Clock* Get() {
    static RealClock clock;
    return &clock;
  }
};

}  // namespace inferd
