// Helpers for the host source tests: a recorder of the sets a source
// reports, deterministic waits (a condition polled until a deadline), and
// sets written as "host:port" strings.
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

#include "core/thread_annotations.h"
#include "discovery/host_source.h"

namespace inferd::discovery::testing {

// Polls `condition` every 5 ms until it holds or `timeout` passes.
inline bool Eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

inline HostSet Set(std::initializer_list<const char*> ids) {
  HostSet set;
  for (const char* id : ids) set.insert(*ParseHostEndpoint(id));
  return set;
}

inline std::string Str(const HostSet& set) {
  std::string s = "{";
  for (const HostEndpoint& e : set) s += (s.size() > 1 ? "," : "") + e.id();
  return s + "}";
}

class SetRecorder {
 public:
  HostSource::OnChange Callback() {
    return [this](const HostSet& set) {
      MutexLock lock(mu_);
      last_ = set;
      ++calls_;
    };
  }
  HostSet last() {
    MutexLock lock(mu_);
    return last_;
  }
  int calls() {
    MutexLock lock(mu_);
    return calls_;
  }
  // Until the last set reported is `want` (20 s at most).
  bool WaitFor(const HostSet& want) {
    return Eventually([&] {
      MutexLock lock(mu_);
      return calls_ > 0 && last_ == want;
    });
  }

 private:
  Mutex mu_;
  HostSet last_ INFERD_GUARDED_BY(mu_);
  int calls_ INFERD_GUARDED_BY(mu_) = 0;
};

}  // namespace inferd::discovery::testing
