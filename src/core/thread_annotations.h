// Thread-safety annotations, checked by clang's -Wthread-safety (the lint
// step of `make test` runs it; GCC builds see empty macros), and the
// annotated mutex they apply to.
//
// Use: a member written under a lock is declared `INFERD_GUARDED_BY(mu_)`;
// a function that expects the lock held is `INFERD_REQUIRES(mu_)`; one that
// takes it itself is `INFERD_EXCLUDES(mu_)`. Lock with `MutexLock`. Wait with
// `CondVar` in a loop written in the locked scope, so the analysis sees the
// guarded reads under the lock:
//
//   MutexLock lock(mu_);
//   while (!ready_) cv_.Wait(lock);
//
// `Mutex` and `CondVar` are thin wrappers over std::mutex and
// std::condition_variable (no extra state, no extra cost); `native()` hands
// the standard objects to code that takes them (Clock::WaitUntil).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define INFERD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define INFERD_THREAD_ANNOTATION(x)
#endif

#define INFERD_CAPABILITY(x) INFERD_THREAD_ANNOTATION(capability(x))
#define INFERD_SCOPED_CAPABILITY INFERD_THREAD_ANNOTATION(scoped_lockable)
#define INFERD_GUARDED_BY(x) INFERD_THREAD_ANNOTATION(guarded_by(x))
#define INFERD_PT_GUARDED_BY(x) INFERD_THREAD_ANNOTATION(pt_guarded_by(x))
#define INFERD_ACQUIRED_BEFORE(...) INFERD_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define INFERD_ACQUIRED_AFTER(...) INFERD_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define INFERD_REQUIRES(...) INFERD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define INFERD_EXCLUDES(...) INFERD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define INFERD_ACQUIRE(...) INFERD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define INFERD_RELEASE(...) INFERD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define INFERD_TRY_ACQUIRE(...) INFERD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define INFERD_ASSERT_CAPABILITY(x) INFERD_THREAD_ANNOTATION(assert_capability(x))
#define INFERD_RETURN_CAPABILITY(x) INFERD_THREAD_ANNOTATION(lock_returned(x))
#define INFERD_NO_THREAD_SAFETY_ANALYSIS INFERD_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace inferd {

class CondVar;
class MutexLock;

// A std::mutex the analysis knows as a capability. Not recursive.
class INFERD_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() INFERD_ACQUIRE() { mu_.lock(); }
  void Unlock() INFERD_RELEASE() { mu_.unlock(); }
  // For code the analysis cannot follow (a callback documented to run with
  // the lock held): states that the caller holds it. Checks nothing at run
  // time.
  void AssertHeld() const INFERD_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock()/Lock() release and retake it inside
// the scope (the destructor releases only if held).
class INFERD_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) INFERD_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() INFERD_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() INFERD_RELEASE() { lock_.unlock(); }
  void Lock() INFERD_ACQUIRE() { lock_.lock(); }
  // The held std::unique_lock, for interfaces that wait on one.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A condition variable used with MutexLock. Waits may return spuriously:
// callers loop on their condition.
class CondVar {
 public:
  void Wait(MutexLock& lock) { cv_.wait(lock.native()); }
  // False when `deadline` passed.
  template <typename ClockT, typename Duration>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<ClockT, Duration> deadline) {
    return cv_.wait_until(lock.native(), deadline) == std::cv_status::no_timeout;
  }
  template <typename Rep, typename Period>
  bool WaitFor(MutexLock& lock, std::chrono::duration<Rep, Period> timeout) {
    return cv_.wait_for(lock.native(), timeout) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }
  std::condition_variable& native() { return cv_; }

 private:
  std::condition_variable cv_;
};

}  // namespace inferd
