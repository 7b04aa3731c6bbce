// The ADS server's counters as Prometheus series, and the JSON debug dump
// (GET /v1/snapshot) that puts the loop's view of the hosts next to what
// each connected xDS client has accepted.
//
// Series (docs/metrics.md): discovery_xds_streams (gauge),
// discovery_xds_responses_total, discovery_xds_acks_total,
// discovery_xds_nacks_total (counters, by type: listener, route, cluster,
// endpoint).
#pragma once

#include <string>

#include "discovery/ads_server.h"
#include "middleman/metrics_registry.h"

namespace inferd::discovery {

// Brings the series up to `stats` (counters only ever go up).
void UpdateXdsMetrics(const AdsStats& stats, middleman::MetricsRegistry& metrics);

// {"discovery": <loop_json>, "xds": {"versions", "streams", "clients"}}.
std::string SnapshotJson(const std::string& loop_json, const AdsStats& stats);

// "listener" for the Listener type URL, etc.; the URL itself otherwise.
std::string ShortTypeName(const std::string& type_url);

}  // namespace inferd::discovery
