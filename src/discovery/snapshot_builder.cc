#include "discovery/snapshot_builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <map>
#include <utility>

#include "envoy_cluster.pb.h"
#include "envoy_endpoint.pb.h"
#include "envoy_http_connection_manager.pb.h"
#include "envoy_listener.pb.h"
#include "envoy_route.pb.h"
#include "envoy_router.pb.h"
#include "envoy_upstream_http.pb.h"

namespace inferd::discovery {
namespace {

namespace core = envoy::config::core::v3;
namespace cluster = envoy::config::cluster::v3;
namespace endpoint = envoy::config::endpoint::v3;
namespace listener = envoy::config::listener::v3;
namespace route = envoy::config::route::v3;
namespace hcm = envoy::extensions::filters::network::http_connection_manager::v3;

constexpr char kTypePrefix[] = "type.googleapis.com/";
constexpr char kHcmFilter[] = "envoy.filters.network.http_connection_manager";
constexpr char kRouterFilter[] = "envoy.filters.http.router";
constexpr char kHttpOptionsKey[] = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
constexpr int64_t kUpstreamIdleTimeoutSeconds = 50;

// Deterministic bytes (map fields in key order), so equal input gives equal
// resources and the ADS server sends nothing when nothing changed.
std::string Serialize(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

void Pack(const google::protobuf::Message& message, google::protobuf::Any* any) {
  any->set_type_url(kTypePrefix + message.GetDescriptor()->full_name());
  any->set_value(Serialize(message));
}

void SetAds(core::ConfigSource* source) {
  source->mutable_ads();  // present and empty: "over the ADS stream"
  source->set_resource_api_version(core::V3);
}

hcm::HttpConnectionManager ConnectionManager(const std::string& stat_prefix,
                                             const std::string& route_config) {
  hcm::HttpConnectionManager manager;
  manager.set_codec_type(hcm::HttpConnectionManager::AUTO);
  manager.set_stat_prefix(stat_prefix);
  auto* rds = manager.mutable_rds();
  SetAds(rds->mutable_config_source());
  rds->set_route_config_name(route_config);
  auto* router = manager.add_http_filters();
  router->set_name(kRouterFilter);
  Pack(envoy::extensions::filters::http::router::v3::Router(), router->mutable_typed_config());
  return manager;
}

// The listener a proxyless gRPC client's xds:///<name> target names.
listener::Listener ApiListener(const std::string& name) {
  listener::Listener l;
  l.set_name(name);
  Pack(ConnectionManager(name, name), l.mutable_api_listener()->mutable_api_listener());
  return l;
}

// A listener Envoy opens on `port` and routes by `route_config`.
listener::Listener SocketListener(const std::string& name, uint32_t port,
                                  const std::string& route_config) {
  listener::Listener l;
  l.set_name(name);
  auto* socket = l.mutable_address()->mutable_socket_address();
  socket->set_address("0.0.0.0");
  socket->set_port_value(port);
  auto* filter = l.add_filter_chains()->add_filters();
  filter->set_name(kHcmFilter);
  Pack(ConnectionManager(name, route_config), filter->mutable_typed_config());
  return l;
}

cluster::Cluster EdsCluster(const std::string& name, bool http2, uint32_t connect_timeout_ms) {
  cluster::Cluster c;
  c.set_name(name);
  c.set_type(cluster::Cluster::EDS);
  SetAds(c.mutable_eds_cluster_config()->mutable_eds_config());
  c.mutable_connect_timeout()->set_seconds(connect_timeout_ms / 1000);
  c.mutable_connect_timeout()->set_nanos(static_cast<int32_t>(connect_timeout_ms % 1000) * 1000000);
  c.set_lb_policy(cluster::Cluster::ROUND_ROBIN);  // the one gRPC 1.51 accepts
  // Envoy: HTTP/2 to inferd's gRPC port, HTTP/1.1 to its HTTP port, and
  // idle upstream connections closed before inferd closes them (its
  // --http-idle-timeout-secs defaults to 60 s), so that Envoy never sends a
  // request on a connection inferd is closing. gRPC ignores these options.
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions options;
  options.mutable_common_http_protocol_options()->mutable_idle_timeout()->set_seconds(
      kUpstreamIdleTimeoutSeconds);
  if (http2) {
    options.mutable_explicit_http_config()->mutable_http2_protocol_options();
  } else {
    options.mutable_explicit_http_config()->mutable_http_protocol_options();
  }
  Pack(options, &(*c.mutable_typed_extension_protocol_options())[kHttpOptionsKey]);
  return c;
}

// Hosts grouped by weight, one locality per weight carrying weight x hosts:
// gRPC 1.51 ignores endpoint weights, picks a locality at random in
// proportion to its weight and then goes round robin inside it. Grouping
// keeps equal hosts in one round-robin locality (a random pick per request
// leaves a busy fleet's hosts idle now and then: about 1 in 9 requests'
// worth at 2 hosts with 4 requests each in flight), and still shifts load
// between hosts whose weights differ. Envoy uses the endpoint weights.
endpoint::ClusterLoadAssignment Assignment(const std::string& name,
                                           const std::vector<const HostStatus*>& hosts,
                                           uint32_t port_override, const std::string& zone) {
  endpoint::ClusterLoadAssignment cla;
  cla.set_cluster_name(name);
  std::map<uint32_t, std::vector<const HostStatus*>, std::greater<>> by_weight;
  for (const HostStatus* h : hosts) by_weight[h->weight].push_back(h);
  for (const auto& [weight, group] : by_weight) {
    auto* locality = cla.add_endpoints();
    locality->mutable_locality()->set_zone(zone);
    locality->mutable_locality()->set_sub_zone("weight-" + std::to_string(weight));
    locality->mutable_load_balancing_weight()->set_value(weight *
                                                         static_cast<uint32_t>(group.size()));
    for (const HostStatus* h : group) {
      auto* lb = locality->add_lb_endpoints();
      auto* socket = lb->mutable_endpoint()->mutable_address()->mutable_socket_address();
      socket->set_address(h->address);
      socket->set_port_value(port_override != 0 ? port_override : h->endpoint.port);
      lb->mutable_endpoint()->set_hostname(h->endpoint.id());
      lb->set_health_status(core::HEALTHY);
      lb->mutable_load_balancing_weight()->set_value(weight);
    }
  }
  return cla;
}

route::Route ToCluster(const std::string& cluster_name, route::RouteMatch match) {
  route::Route r;
  *r.mutable_match() = std::move(match);
  r.mutable_route()->set_cluster(cluster_name);
  // A zero timeout, present: Envoy's default 15 s per request would cut off
  // long inferences and every ModelStreamInfer stream; the caller's deadline
  // rules instead (gRPC clients ignore this field).
  r.mutable_route()->mutable_timeout();
  return r;
}

route::RouteMatch PrefixMatch(const std::string& prefix) {
  route::RouteMatch m;
  m.set_prefix(prefix);
  return m;
}

class Builder {
 public:
  Builder(const std::vector<HostStatus>& hosts, const SnapshotOptions& options)
      : options_(options) {
    // One endpoint per address and port, even when two sources name the
    // same host differently (a name and its address, two Services): clients
    // want unique addresses in a cluster.
    std::set<std::pair<std::string, uint16_t>> seen;
    std::map<std::string, std::vector<const HostStatus*>> unloading;
    for (const auto& h : hosts) {
      if (!h.ready || h.address.empty()) continue;
      if (!seen.emplace(h.address, h.endpoint.port).second) continue;
      ready_.push_back(&h);
      for (const auto& m : h.models) by_model_[m].push_back(&h);
      for (const auto& m : h.unloading_models) unloading[m].push_back(&h);
    }
    // A model no host has READY any more, while some host is still serving
    // it through its unload delay, stays routed there until it is gone.
    for (auto& [model, serving] : unloading) {
      if (by_model_.count(model) == 0) by_model_[model] = std::move(serving);
    }
  }

  void AddFleet(const std::set<std::string, std::less<>>& linger) {
    const std::string& fleet = options_.fleet_name;
    Add(ApiListener(fleet), /*in_wildcard=*/false);
    Add(SocketListener(fleet + "_grpc", options_.envoy_grpc_port, fleet), true);
    AddClusters(fleet, /*http2=*/true, 0, linger);

    route::RouteConfiguration rc;
    rc.set_name(fleet);
    auto* vh = rc.add_virtual_hosts();
    vh->set_name(fleet);
    vh->add_domains("*");
    for (const auto& [model, unused] : by_model_) {
      route::RouteMatch match = PrefixMatch("/");
      auto* header = match.add_headers();
      header->set_name(kModelHeader);
      header->set_exact_match(model);
      auto* r = vh->add_routes();
      *r = ToCluster(ModelClusterName(fleet, model), std::move(match));
      r->set_name("model:" + model);
    }
    *vh->add_routes() = ToCluster(fleet, PrefixMatch("/"));
    Add(rc, true);
  }

  void AddHttp(const std::set<std::string, std::less<>>& linger) {
    const std::string name = options_.fleet_name + "_http";
    Add(SocketListener(name, options_.envoy_http_port, name), true);
    AddClusters(name, /*http2=*/false, options_.http_port, linger);

    route::RouteConfiguration rc;
    rc.set_name(name);
    auto* vh = rc.add_virtual_hosts();
    vh->set_name(name);
    vh->add_domains("*");
    for (const auto& [model, unused] : by_model_) {
      // /v2/models/<m> (metadata) and everything below it; not /v2/models/<m>x.
      const std::string base = "/v2/models/" + model;
      route::RouteMatch exact;
      exact.set_path(base);
      *vh->add_routes() = ToCluster(ModelClusterName(name, model), std::move(exact));
      *vh->add_routes() = ToCluster(ModelClusterName(name, model), PrefixMatch(base + "/"));
    }
    *vh->add_routes() = ToCluster(name, PrefixMatch("/"));
    Add(rc, true);
  }

  XdsSnapshot Take() { return std::move(snapshot_); }

 private:
  void AddClusters(const std::string& fleet, bool http2, uint32_t port,
                   const std::set<std::string, std::less<>>& linger) {
    const uint32_t timeout = options_.connect_timeout_ms;
    Add(EdsCluster(fleet, http2, timeout), true);
    Add(Assignment(fleet, ready_, port, options_.zone), true);
    for (const auto& [model, hosts] : by_model_) {
      const std::string name = ModelClusterName(fleet, model);
      Add(EdsCluster(name, http2, timeout), true);
      Add(Assignment(name, hosts, port, options_.zone), true);
    }
    for (const auto& model : linger) {
      if (by_model_.count(model) != 0) continue;
      const std::string name = ModelClusterName(fleet, model);
      Add(EdsCluster(name, http2, timeout), true);
      Add(Assignment(name, {}, port, options_.zone), true);
    }
  }

  template <typename Resource>
  void Add(const Resource& resource, bool in_wildcard) {
    const std::string type = kTypePrefix + resource.GetDescriptor()->full_name();
    snapshot_.resources[type][ResourceName(resource)] =
        XdsResource{Serialize(resource), in_wildcard};
  }

  static const std::string& ResourceName(const endpoint::ClusterLoadAssignment& r) {
    return r.cluster_name();
  }
  template <typename Resource>
  static const std::string& ResourceName(const Resource& r) {
    return r.name();
  }

  const SnapshotOptions& options_;
  std::vector<const HostStatus*> ready_;
  std::map<std::string, std::vector<const HostStatus*>> by_model_;
  XdsSnapshot snapshot_;
};

}  // namespace

std::string ModelClusterName(const std::string& fleet, const std::string& model) {
  return fleet + "/" + model;
}

XdsSnapshot BuildSnapshot(const std::vector<HostStatus>& hosts,
                          const std::set<std::string, std::less<>>& linger_models,
                          const SnapshotOptions& options) {
  Builder builder(hosts, options);
  builder.AddFleet(linger_models);
  if (options.http_port != 0) builder.AddHttp(linger_models);
  return builder.Take();
}

}  // namespace inferd::discovery
