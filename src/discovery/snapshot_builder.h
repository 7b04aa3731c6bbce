// BuildSnapshot: hosts x models x health -> the xDS resources that route
// each request to a ready host serving its model. Pure: same input, same
// bytes (resources are serialized deterministically), so the ADS server can
// tell "changed" from "the same" by comparing them.
//
// What it publishes (docs/discovery.md has the picture):
//   Cluster + ClusterLoadAssignment "inferd"        every ready host
//   Cluster + ClusterLoadAssignment "inferd/<m>"    ready hosts where m is READY
//                                                   (or, when none is, where it
//                                                   is UNLOADING: still served)
//   RouteConfiguration "inferd"  per model m: requests with the header
//       `inferd-model: m` -> "inferd/<m>"; everything else -> "inferd"
//   Listener "inferd"            API listener (proxyless gRPC: xds:///inferd),
//                                RDS "inferd"; only to clients that name it
//   Listener "inferd_grpc"       Envoy socket listener on envoy_grpc_port,
//                                same routes (wildcard LDS)
// and, when the hosts' HTTP port is known (http_port > 0), the same for
// HTTP/REST through Envoy: clusters "inferd_http" and "inferd_http/<m>" on
// that port, RouteConfiguration "inferd_http" matching /v2/models/<m> and
// /v2/models/<m>/..., Listener "inferd_http" on envoy_http_port.
//
// Endpoints: one per address and port (hosts named twice count once); each carries its host's
// weight (Envoy's round robin uses it) and its id as hostname. gRPC 1.51 ignores endpoint weights:
// it picks a locality at random by locality weight, then round robin inside it; so hosts of equal
// weight share one locality (sub_zone "weight-<w>", locality weight w x hosts), which keeps an
// evenly loaded fleet on plain round robin. Hosts that are not ready are left out (clients ignore
// anything but HEALTHY anyway).
//
// `linger_models`: models that just disappeared from every host. Their
// clusters stay (with no endpoints) while the route to them is already gone,
// so a client that applies the cluster update before the route update never
// routes to a cluster it does not have; the caller drops them later.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "discovery/host_status.h"
#include "discovery/xds_snapshot.h"

namespace inferd::discovery {

inline constexpr char kModelHeader[] = "inferd-model";

struct SnapshotOptions {
  std::string fleet_name = "inferd";   // listener, route and fleet cluster name
  uint32_t envoy_grpc_port = 8001;     // Envoy's gRPC listener
  uint32_t envoy_http_port = 8000;     // Envoy's HTTP listener (with http_port)
  uint32_t http_port = 0;              // the hosts' HTTP port; 0: no HTTP routes
  uint32_t connect_timeout_ms = 1000;  // Envoy's connect timeout to a host
  std::string zone;                    // locality zone of every endpoint
};

// Cluster names: "<fleet>/<model>" and "<fleet>_http/<model>".
std::string ModelClusterName(const std::string& fleet, const std::string& model);

XdsSnapshot BuildSnapshot(const std::vector<HostStatus>& hosts,
                          const std::set<std::string, std::less<>>& linger_models,
                          const SnapshotOptions& options);

}  // namespace inferd::discovery
