// The command line of inferd-discovery, parsed into plain options. Pure
// (no I/O), so a unit test covers every flag and every refusal.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "discovery/discovery_loop.h"
#include "discovery/host_sources.h"

namespace inferd::discovery {

struct DiscoveryOptions {
  std::string xds_address = "0.0.0.0";
  int xds_port = 18000;  // 0: any free port (logged)
  std::string http_address = "0.0.0.0";
  int http_port = 18080;         // health, metrics, /v1/snapshot; 0: any free port
  std::string control_plane_id;  // default: the host name
  // Host sources (host_sources.h parses their flags, each repeatable); the
  // file and DNS sources re-read at the poll interval unless
  // --source-interval-ms says otherwise.
  HostSourceOptions sources;
  bool source_interval_set = false;
  DiscoveryLoopOptions loop;
  bool help = false;
};

extern const char kDiscoveryUsage[];

// Accepts "--flag=value" and "--flag value". INVALID_ARGUMENT naming the
// flag and what is wrong.
StatusOr<DiscoveryOptions> ParseDiscoveryFlags(const std::vector<std::string>& args);

}  // namespace inferd::discovery
