#include "discovery/source_support.h"

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd::discovery {

void SourceHealth::Fail(std::string_view reason) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(mu_);
  if (last_reason_ == reason) return;
  last_reason_ = std::string(reason);
  INFERD_LOG(Warning) << "host source " << EscapeControl(name_) << ": " << EscapeControl(reason)
                      << " (keeping the last good set)";
}

void SourceHealth::Note(std::string_view note) {
  MutexLock lock(mu_);
  if (last_reason_ == note) return;
  last_reason_ = std::string(note);
  INFERD_LOG(Warning) << "host source " << EscapeControl(name_) << ": " << EscapeControl(note);
}

void SourceHealth::Recovered() {
  MutexLock lock(mu_);
  if (last_reason_.empty()) return;
  last_reason_.clear();
  INFERD_LOG(Info) << "host source " << EscapeControl(name_) << ": reading again";
}

void StopSignal::Reset() {
  MutexLock lock(mu_);
  stopped_ = false;
}

void StopSignal::Stop() {
  MutexLock lock(mu_);
  stopped_ = true;
  cv_.NotifyAll();
}

bool StopSignal::stopped() {
  MutexLock lock(mu_);
  return stopped_;
}

bool StopSignal::SleepFor(std::chrono::milliseconds d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  MutexLock lock(mu_);
  while (!stopped_) {
    if (!cv_.WaitUntil(lock, deadline)) break;
  }
  return !stopped_;
}

}  // namespace inferd::discovery
