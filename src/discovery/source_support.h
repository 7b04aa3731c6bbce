// What every HostSource implementation shares: the error counter with its
// once-per-reason log (SourceHealth), an interruptible sleep for the
// source's thread (StopSignal), and the "call back only when the set
// changed" rule (ChangeReporter).
//
// Threading: SourceHealth and StopSignal may be used from any thread.
// ChangeReporter is used by the source's own thread only (the callback
// contract: never concurrently with itself).
// Errors: none; these only log.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/thread_annotations.h"
#include "discovery/host_source.h"

namespace inferd::discovery {

class SourceHealth {
 public:
  explicit SourceHealth(std::string source_name) : name_(std::move(source_name)) {}

  // A failure to read the source: counted; logged as a warning when
  // `reason` differs from the last failure's (a source failing every poll
  // for the same reason logs it once).
  void Fail(std::string_view reason);
  // The source read fine: logs once that an earlier failure is over.
  void Recovered();
  // Logs `note` as a warning once per distinct note, without counting an
  // error (an answer worth knowing about, e.g. DNS "no such name").
  void Note(std::string_view note);
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  const std::string name_;
  std::atomic<uint64_t> errors_{0};
  Mutex mu_;
  std::string last_reason_ INFERD_GUARDED_BY(mu_);
};

// Stop() wakes SleepFor at once and makes every later one return false.
class StopSignal {
 public:
  void Reset() INFERD_EXCLUDES(mu_);
  void Stop() INFERD_EXCLUDES(mu_);
  bool stopped() INFERD_EXCLUDES(mu_);
  // False when stopped (before or during the sleep).
  bool SleepFor(std::chrono::milliseconds d) INFERD_EXCLUDES(mu_);

 private:
  Mutex mu_;
  CondVar cv_;
  bool stopped_ INFERD_GUARDED_BY(mu_) = false;
};

// Calls the callback with the first set, then with every set that differs
// from the last one it was called with.
class ChangeReporter {
 public:
  void Reset(HostSource::OnChange on_change) {
    on_change_ = std::move(on_change);
    last_.reset();
  }
  void Report(const HostSet& set) {
    if (last_.has_value() && *last_ == set) return;
    last_ = set;
    if (on_change_) on_change_(set);
  }
  // The last set reported; null before the first.
  const HostSet* last() const { return last_.has_value() ? &*last_ : nullptr; }

 private:
  HostSource::OnChange on_change_;
  std::optional<HostSet> last_;
};

}  // namespace inferd::discovery
