// PollingHostSource: the shell of a source that re-reads its input every
// interval (a hosts file, a DNS name). A subclass writes Poll(); this class
// owns the thread, the sleep between polls, the error counter and the
// change detection.
//
// Ownership: the source owns its thread. A subclass's destructor must call
// Stop() first (Poll() uses the subclass's members).
// Threading: Start/Stop from one owning thread; Poll() and the callback run
// on the source's thread, the first poll right after Start. name() and
// errors() from any thread.
// Errors: Poll() returns nullopt when it cannot read the input, having
// called health().Fail(reason); the last good set then stays reported.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "discovery/host_source.h"
#include "discovery/source_support.h"

namespace inferd::discovery {

class PollingHostSource : public HostSource {
 public:
  ~PollingHostSource() override;
  PollingHostSource(const PollingHostSource&) = delete;
  PollingHostSource& operator=(const PollingHostSource&) = delete;

  std::string name() const override { return name_; }
  void Start(OnChange on_change) override;
  void Stop() override;
  uint64_t errors() const override { return health_.errors(); }

 protected:
  PollingHostSource(std::string name, std::chrono::milliseconds interval)
      : name_(std::move(name)), interval_(interval), health_(name_) {}

  // The current set, or nullopt to keep the last one (see Errors above).
  virtual std::optional<HostSet> Poll() = 0;
  SourceHealth& health() { return health_; }

 private:
  void Run();

  const std::string name_;
  const std::chrono::milliseconds interval_;
  SourceHealth health_;
  StopSignal stop_;
  ChangeReporter reporter_;  // the source's thread only
  std::thread thread_;
};

}  // namespace inferd::discovery
