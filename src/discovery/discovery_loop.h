// DiscoveryLoop: the control plane's heartbeat. Every poll interval (and at
// once when the host set changes) it probes every known host, computes the
// weights, builds the xDS snapshot and publishes it:
//
//   host sources --hosts()--> HostProber --statuses--> BuildSnapshot --> publish
//
// A host that turns not ready (draining after SIGTERM) is out of every
// assignment after the round that sees it, i.e. within one poll interval
// plus the probe timeout.
//
// When every probe fails (no answer at all, as when this process is cut off
// from the hosts), nothing is published: clients keep the last assignment
// ("fail static"), as they do when the control plane itself is gone.
//
// Models that disappear from every host keep an empty cluster for
// `linger_rounds` rounds after their route is gone (snapshot_builder.h).
//
// Ownership: owns the prober and its thread; `hosts` and `publish` are
// called on that thread and must not block for long. Threading: Start and
// Stop from one thread; Wake, Dump and the accessors from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "discovery/host_prober.h"
#include "discovery/snapshot_builder.h"
#include "middleman/metrics_registry.h"

namespace inferd::discovery {

struct DiscoveryLoopOptions {
  std::chrono::milliseconds poll_interval{1000};
  ProberOptions prober;
  SnapshotOptions snapshot;
  int linger_rounds = 5;
};

class DiscoveryLoop {
 public:
  using Publish = std::function<void(std::shared_ptr<const XdsSnapshot>)>;

  // `metrics` is not owned and must outlive the loop.
  DiscoveryLoop(DiscoveryLoopOptions options, std::function<HostSet()> hosts, Publish publish,
                middleman::MetricsRegistry* metrics);
  ~DiscoveryLoop();
  DiscoveryLoop(const DiscoveryLoop&) = delete;
  DiscoveryLoop& operator=(const DiscoveryLoop&) = delete;

  void Start();
  void Stop();
  // Starts a round now (e.g. the host set changed) instead of at the next tick.
  void Wake();

  // Whether a round has completed (the service's readiness).
  bool HasPolled() const;
  // The last round as JSON: each host's status, reason, models and weight,
  // and the published resource names by type.
  std::string DumpJson() const;

 private:
  void Run();
  void Round();
  // Builds and publishes the snapshot (and keeps vanished models lingering).
  std::shared_ptr<const XdsSnapshot> BuildAndPublish(
      const std::vector<HostStatus>& statuses, const std::set<std::string, std::less<>>& models);
  // Keeps the round for DumpJson and logs hosts whose readiness changed.
  void Remember(std::vector<HostStatus> statuses, std::shared_ptr<const XdsSnapshot> snapshot)
      INFERD_EXCLUDES(mu_);

  const DiscoveryLoopOptions options_;
  const std::function<HostSet()> hosts_;
  const Publish publish_;
  middleman::MetricsRegistry* const metrics_;
  HostProber prober_;  // used on the loop thread only

  mutable Mutex mu_;
  CondVar cv_;
  bool stop_ INFERD_GUARDED_BY(mu_) = false;
  bool wake_ INFERD_GUARDED_BY(mu_) = false;
  uint64_t rounds_ INFERD_GUARDED_BY(mu_) = 0;
  std::vector<HostStatus> last_statuses_ INFERD_GUARDED_BY(mu_);
  std::shared_ptr<const XdsSnapshot> last_snapshot_ INFERD_GUARDED_BY(mu_);
  // Loop thread only: models seen on no host, with rounds left to linger.
  std::map<std::string, int, std::less<>> lingering_;
  std::set<std::string, std::less<>> last_models_;
  bool published_ready_ = false;  // the last published assignment had a host
  bool fail_static_ = false;      // every probe failed last round: nothing published
  std::thread thread_;
};

}  // namespace inferd::discovery
