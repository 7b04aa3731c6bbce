// HostStatus: what the prober last learned about one inferd host, the input
// of the weight policy and the snapshot builder.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "discovery/host_source.h"

namespace inferd::discovery {

struct HostStatus {
  HostEndpoint endpoint;
  // The IP literal the endpoint's host resolved to (balancers need one);
  // empty when it did not resolve.
  std::string address;
  // The host answered its last probe and says it is ready (ServerReady).
  // False while draining after SIGTERM, when unreachable, on timeouts and on
  // answers that make no sense; `reason` then says which.
  bool ready = false;
  std::string reason;
  // Models with a READY version (RepositoryIndex), by name.
  std::set<std::string, std::less<>> models;
  // Models being unloaded (UNLOADING, --model-unload-delay-secs): still
  // served, routed here only while no host has them READY.
  std::set<std::string, std::less<>> unloading_models;
  // Smoothed load signals (see weight_policy.h): queue time per request over
  // the last poll intervals, in microseconds, and requests in flight
  // (pending), when the host reports them; negative when unknown.
  double queue_us_per_request = -1;
  double pending_requests = -1;
  // Endpoint weight for balancers, 1..kMaxWeight (weight_policy.h).
  uint32_t weight = 1;
};

}  // namespace inferd::discovery
