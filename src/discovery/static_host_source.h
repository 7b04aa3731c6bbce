// StaticHostSource: a fixed list of endpoints (--hosts=H:P,H:P). Reports
// its set once, on the caller's thread, inside Start.
//
// Threading: Start/Stop from one thread; name() and errors() from any.
// Errors: none (the list was parsed before; errors() is always 0).
#pragma once

#include "discovery/host_source.h"

namespace inferd::discovery {

class StaticHostSource final : public HostSource {
 public:
  explicit StaticHostSource(HostSet hosts) : hosts_(std::move(hosts)) {}

  std::string name() const override;  // "static:h1:p1,h2:p2" (the first few)
  void Start(OnChange on_change) override { on_change(hosts_); }
  void Stop() override {}
  uint64_t errors() const override { return 0; }

 private:
  const HostSet hosts_;
};

}  // namespace inferd::discovery
