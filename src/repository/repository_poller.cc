#include "repository/repository_poller.h"

namespace inferd {

RepositoryPoller::RepositoryPoller(Clock* clock, std::chrono::microseconds interval,
                                   std::function<void()> pass)
    : clock_(clock), interval_(interval), pass_(std::move(pass)) {
  {
    // Set before the thread runs, so that a clock moved right after
    // construction is seen by the first wait.
    MutexLock lock(mu_);
    next_ = clock_->Now() + interval_;
  }
  thread_ = std::thread([this] { Loop(); });
}

RepositoryPoller::~RepositoryPoller() { Stop(); }

void RepositoryPoller::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.NotifyAll();
  passed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

uint64_t RepositoryPoller::AwaitPass(uint64_t seen) {
  MutexLock lock(mu_);
  while (passes_ <= seen && !stop_) passed_.Wait(lock);
  return passes_;
}

void RepositoryPoller::Loop() {
  MutexLock lock(mu_);
  while (!stop_) {
    if (clock_->Now() < next_) {
      clock_->WaitUntil(lock.native(), wake_.native(), next_);
      continue;
    }
    lock.Unlock();
    pass_();
    lock.Lock();
    // The next deadline is set before the pass is announced, so a test that
    // moves the clock after AwaitPass is seen by the next wait.
    next_ = clock_->Now() + interval_;
    ++passes_;
    passed_.NotifyAll();
  }
}

}  // namespace inferd
