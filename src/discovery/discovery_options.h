// The command line of inferd-discovery, parsed into plain options. Pure
// (no I/O), so a unit test covers every flag and every refusal.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "discovery/discovery_loop.h"

namespace inferd::discovery {

struct DiscoveryOptions {
  std::string xds_address = "0.0.0.0";
  int xds_port = 18000;  // 0: any free port (logged)
  std::string http_address = "0.0.0.0";
  int http_port = 18080;         // health, metrics, /v1/snapshot; 0: any free port
  std::string control_plane_id;  // default: the host name
  // Host sources (each flag repeatable).
  std::vector<std::string> hosts;                // --hosts HOST:PORT[,...]
  std::vector<std::string> hosts_files;          // --hosts-file FILE
  std::vector<std::string> dns;                  // --dns NAME:PORT
  std::vector<std::string> kubernetes_services;  // --kubernetes-service NS/NAME:PORT
  std::string kubernetes_api;                    // default: in-cluster
  std::string kubernetes_token_file;
  std::string kubernetes_ca_file;
  DiscoveryLoopOptions loop;
  bool help = false;
};

extern const char kDiscoveryUsage[];

// Accepts "--flag=value" and "--flag value". INVALID_ARGUMENT naming the
// flag and what is wrong.
StatusOr<DiscoveryOptions> ParseDiscoveryFlags(const std::vector<std::string>& args);

}  // namespace inferd::discovery
