#include "discovery/polling_host_source.h"

namespace inferd::discovery {

PollingHostSource::~PollingHostSource() { Stop(); }

void PollingHostSource::Start(OnChange on_change) {
  Stop();
  stop_.Reset();
  reporter_.Reset(std::move(on_change));
  thread_ = std::thread([this] { Run(); });
}

void PollingHostSource::Stop() {
  stop_.Stop();
  if (thread_.joinable()) thread_.join();
}

void PollingHostSource::Run() {
  do {
    std::optional<HostSet> set = Poll();
    if (set.has_value()) reporter_.Report(*set);
  } while (stop_.SleepFor(interval_));
}

}  // namespace inferd::discovery
