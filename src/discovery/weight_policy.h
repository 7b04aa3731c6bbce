// WeightPolicy: load-aware endpoint weights from what the prober measured.
// Pure functions, so that a table-driven test pins them down.
//
// Signals per host, from the deltas of its ModelStatistics between two
// polls (host_prober.h): the queue time per request (how long a new request
// waits there) and the average number of requests in the server over the
// interval (Little's law: busy request-time / wall time). Both are
// smoothed with an exponential moving average so that one odd poll moves a
// weight only part of the way.
//
// Weight: balancers already spread requests evenly; weights correct only
// a host that is far behind, because a load signal seen a poll late and
// acted on hard makes load swing between hosts (a host that gets fewer
// requests empties its queue, looks idle, gets all of them...), and because
// any weight that differs splits gRPC's round robin (snapshot_builder.h).
// Under round robin in a closed loop the queues of equal hosts drift apart
// and stay apart (measured: 500 ms of queue on one host, none on the other;
// 420 vs 110 vs 10 ms at three), so the band is wide: a host keeps
// kMaxWeight while its expected wait is within `band` (4) times the fleet's
// median plus a floor that absorbs noise; beyond that its weight falls in
// proportion (a host at twice the allowed wait gets half), in steps of a
// tenth so that hosts under similar load share one weight, never below
// kMinWeight, so one slow scrape cannot starve a host. A new weight
// replaces the previous one only when it differs by more than the
// hysteresis fraction.
#pragma once

#include <cstdint>
#include <vector>

namespace inferd::discovery {

inline constexpr uint32_t kMaxWeight = 100;
inline constexpr uint32_t kMinWeight = 10;

struct WeightOptions {
  double smoothing = 0.3;         // EWMA weight of the newest sample, (0, 1]
  double floor_us = 2000;         // waits below this count as "no queue"
  double inflight_cost_us = 100;  // added expected wait per request in flight
  double band = 4.0;              // full weight up to this multiple of the median
  double hysteresis = 0.15;       // keep the old weight within this fraction
};

// The next smoothed value: `sample` when there is no previous one (< 0);
// the previous one when the sample is unknown (< 0).
double Smooth(double previous, double sample, double smoothing);

struct HostLoad {
  double queue_us_per_request = -1;  // smoothed; < 0 unknown
  double inflight = -1;              // smoothed; < 0 unknown
  uint32_t previous_weight = 0;      // 0: none yet
};

// One weight per host, in the same order, each in [kMinWeight, kMaxWeight].
// Unknown signals count as no load.
std::vector<uint32_t> ComputeWeights(const std::vector<HostLoad>& hosts,
                                     const WeightOptions& options);

}  // namespace inferd::discovery
