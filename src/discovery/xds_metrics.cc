#include "discovery/xds_metrics.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "discovery/xds_snapshot.h"

namespace inferd::discovery {

std::string ShortTypeName(const std::string& type_url) {
  if (type_url == kListenerType) return "listener";
  if (type_url == kRouteConfigurationType) return "route";
  if (type_url == kClusterType) return "cluster";
  if (type_url == kClusterLoadAssignmentType) return "endpoint";
  return type_url;
}

void UpdateXdsMetrics(const AdsStats& stats, middleman::MetricsRegistry& metrics) {
  auto set = [](middleman::Counter& series, double value) {
    if (value > series.value()) series.Add(value - series.value());
  };
  auto& streams = metrics.gauge("discovery_xds_streams", "open xDS (ADS) streams");
  streams.Add(static_cast<double>(stats.connected_streams) - streams.value());
  for (const auto& [type, c] : stats.by_type) {
    const metrics::Labels labels = {{"type", ShortTypeName(type)}};
    set(metrics.counter("discovery_xds_responses_total", "xDS responses pushed", labels),
        static_cast<double>(c.responses));
    set(metrics.counter("discovery_xds_acks_total", "xDS responses clients accepted", labels),
        static_cast<double>(c.acks));
    set(metrics.counter("discovery_xds_nacks_total", "xDS responses clients rejected", labels),
        static_cast<double>(c.nacks));
  }
}

std::string SnapshotJson(const std::string& loop_json, const AdsStats& stats) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("versions");
  w.StartObject();
  for (const auto& [type, version] : stats.versions) {
    w.Key(ShortTypeName(type).c_str());
    w.String(version.c_str());
  }
  w.EndObject();
  w.Key("streams");
  w.Uint64(stats.connected_streams);
  w.Key("clients");
  w.StartArray();
  for (const auto& c : stats.clients) {
    w.StartObject();
    w.Key("node_id");
    w.String(c.node_id.c_str());
    w.Key("user_agent");
    w.String((c.user_agent_name + " " + c.user_agent_version).c_str());
    w.Key("peer");
    w.String(c.peer.c_str());
    w.Key("types");
    w.StartObject();
    for (const auto& t : c.types) {
      w.Key(ShortTypeName(t.type_url).c_str());
      w.StartObject();
      w.Key("wildcard");
      w.Bool(t.wildcard);
      w.Key("names");
      w.Uint64(t.subscribed_names);
      w.Key("sent");
      w.String(t.sent_version.c_str());
      w.Key("acked");
      w.String(t.acked_version.c_str());
      if (!t.last_nack_error.empty()) {
        w.Key("nacked");
        w.String(t.nacked_version.c_str());
        w.Key("nack_error");
        w.String(t.last_nack_error.c_str());
      }
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return "{\"discovery\":" + loop_json + ",\"xds\":" + buf.GetString() + "}";
}

}  // namespace inferd::discovery
