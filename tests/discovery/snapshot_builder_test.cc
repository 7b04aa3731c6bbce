// Hosts x models x health -> xDS resources, decoded back and checked field by
// field (names, type URLs, the header routes, one locality per host, weights).
#include "discovery/snapshot_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "envoy_cluster.pb.h"
#include "envoy_endpoint.pb.h"
#include "envoy_http_connection_manager.pb.h"
#include "envoy_listener.pb.h"
#include "envoy_route.pb.h"
#include "envoy_upstream_http.pb.h"

namespace inferd::discovery {
namespace {

namespace cluster = envoy::config::cluster::v3;
namespace endpoint = envoy::config::endpoint::v3;
namespace listener = envoy::config::listener::v3;
namespace route = envoy::config::route::v3;
namespace hcm = envoy::extensions::filters::network::http_connection_manager::v3;

constexpr char kHttpOptionsKey[] = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

HostStatus Host(const std::string& ip, uint16_t port, bool ready,
                std::set<std::string, std::less<>> models, uint32_t weight = 100) {
  HostStatus h;
  h.endpoint = {ip, port};
  h.address = ip;
  h.ready = ready;
  h.models = std::move(models);
  h.weight = weight;
  return h;
}

template <typename Message>
Message Decode(const XdsSnapshot& s, std::string_view type, const std::string& name) {
  Message m;
  auto& of = s.Of(type);
  auto it = of.find(name);
  EXPECT_NE(it, of.end()) << "no " << type << " named " << name;
  if (it != of.end()) {
    EXPECT_TRUE(m.ParseFromString(it->second.bytes));
  }
  return m;
}

std::vector<std::string> Names(const XdsSnapshot& s, std::string_view type) {
  std::vector<std::string> names;
  for (const auto& [name, unused] : s.Of(type)) names.push_back(name);
  return names;
}

// "ip:port" of each endpoint with its weight; checks the grouping: one
// locality per weight, with weight x hosts.
std::vector<std::pair<std::string, uint32_t>> Endpoints(
    const endpoint::ClusterLoadAssignment& cla) {
  std::vector<std::pair<std::string, uint32_t>> out;
  std::set<uint32_t> weights;
  for (const auto& locality : cla.endpoints()) {
    EXPECT_GE(locality.lb_endpoints_size(), 1);
    const uint32_t w = locality.lb_endpoints(0).load_balancing_weight().value();
    EXPECT_TRUE(weights.insert(w).second) << "two localities of weight " << w;
    EXPECT_EQ(locality.locality().sub_zone(), "weight-" + std::to_string(w));
    EXPECT_EQ(locality.load_balancing_weight().value(), w * locality.lb_endpoints_size());
    for (const auto& lb : locality.lb_endpoints()) {
      const auto& sa = lb.endpoint().address().socket_address();
      EXPECT_EQ(lb.endpoint().hostname(), sa.address() + ":" + std::to_string(sa.port_value()));
      EXPECT_EQ(lb.load_balancing_weight().value(), w);
      EXPECT_EQ(lb.health_status(), envoy::config::core::v3::HEALTHY);
      out.emplace_back(lb.endpoint().hostname(), w);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class SnapshotBuilderTest : public ::testing::Test {
 protected:
  std::vector<HostStatus> hosts_ = {
      Host("10.0.0.1", 8001, true, {"simple", "resnet"}, 100),
      Host("10.0.0.2", 8001, true, {"simple"}, 40),
      Host("10.0.0.3", 8001, false, {"simple", "resnet"}),  // draining
  };
  SnapshotOptions options_;
};

TEST_F(SnapshotBuilderTest, OneClusterForTheFleetAndOnePerModelWithReadyHostsOnly) {
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  EXPECT_EQ(Names(s, kClusterType),
            (std::vector<std::string>{"inferd", "inferd/resnet", "inferd/simple"}));
  EXPECT_EQ(Names(s, kClusterLoadAssignmentType), Names(s, kClusterType));

  using E = std::vector<std::pair<std::string, uint32_t>>;
  EXPECT_EQ(
      Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType, "inferd")),
      (E{{"10.0.0.1:8001", 100}, {"10.0.0.2:8001", 40}}));
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/resnet")),
            (E{{"10.0.0.1:8001", 100}}));
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/simple")),
            (E{{"10.0.0.1:8001", 100}, {"10.0.0.2:8001", 40}}));

  auto c = Decode<cluster::Cluster>(s, kClusterType, "inferd/simple");
  EXPECT_EQ(c.type(), cluster::Cluster::EDS);  // STATIC is the proto default: must be explicit
  EXPECT_TRUE(c.eds_cluster_config().eds_config().has_ads());
  EXPECT_EQ(c.lb_policy(), cluster::Cluster::ROUND_ROBIN);
  EXPECT_GT(c.connect_timeout().seconds() * 1000 + c.connect_timeout().nanos() / 1000000, 0);
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions http;
  ASSERT_TRUE(
      http.ParseFromString(c.typed_extension_protocol_options().at(kHttpOptionsKey).value()));
  EXPECT_TRUE(http.explicit_http_config().has_http2_protocol_options());
  // Below inferd's default --http-idle-timeout-secs (60).
  EXPECT_GT(http.common_http_protocol_options().idle_timeout().seconds(), 0);
  EXPECT_LT(http.common_http_protocol_options().idle_timeout().seconds(), 60);
}

TEST_F(SnapshotBuilderTest, RoutesByTheModelHeaderThenToTheFleet) {
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  auto rc = Decode<route::RouteConfiguration>(s, kRouteConfigurationType, "inferd");
  ASSERT_EQ(rc.virtual_hosts_size(), 1);
  const auto& vh = rc.virtual_hosts(0);
  EXPECT_EQ(vh.domains(0), "*");
  ASSERT_EQ(vh.routes_size(), 3);
  for (int i = 0; i < 2; ++i) {
    const auto& r = vh.routes(i);
    EXPECT_EQ(r.match().prefix(), "/");
    ASSERT_EQ(r.match().headers_size(), 1);
    EXPECT_EQ(r.match().headers(0).name(), kModelHeader);
    EXPECT_EQ(r.route().cluster(), "inferd/" + r.match().headers(0).exact_match());
    EXPECT_TRUE(r.route().has_timeout());  // zero: no Envoy per-request timeout
  }
  EXPECT_EQ(vh.routes(2).match().prefix(), "/");
  EXPECT_EQ(vh.routes(2).match().headers_size(), 0);
  EXPECT_EQ(vh.routes(2).route().cluster(), "inferd");
}

TEST_F(SnapshotBuilderTest, AnApiListenerForGrpcAndASocketListenerForEnvoy) {
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  EXPECT_FALSE(s.Of(kListenerType).at("inferd").in_wildcard);  // Envoy must not get it
  EXPECT_TRUE(s.Of(kListenerType).at("inferd_grpc").in_wildcard);

  auto api = Decode<listener::Listener>(s, kListenerType, "inferd");
  EXPECT_EQ(api.api_listener().api_listener().type_url(),
            "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
            "HttpConnectionManager");
  hcm::HttpConnectionManager manager;
  ASSERT_TRUE(manager.ParseFromString(api.api_listener().api_listener().value()));
  EXPECT_TRUE(manager.rds().config_source().has_ads());
  EXPECT_EQ(manager.rds().route_config_name(), "inferd");
  ASSERT_EQ(manager.http_filters_size(), 1);
  EXPECT_EQ(manager.http_filters(0).typed_config().type_url(),
            "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router");

  auto socket = Decode<listener::Listener>(s, kListenerType, "inferd_grpc");
  EXPECT_EQ(socket.address().socket_address().port_value(), 8001u);
  ASSERT_EQ(socket.filter_chains_size(), 1);
  EXPECT_EQ(socket.filter_chains(0).filters(0).name(),
            "envoy.filters.network.http_connection_manager");
}

TEST_F(SnapshotBuilderTest, HttpRoutesWhenTheHostsHttpPortIsKnown) {
  EXPECT_EQ(BuildSnapshot(hosts_, {}, options_).Of(kRouteConfigurationType).size(), 1u);
  options_.http_port = 8000;
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  auto rc = Decode<route::RouteConfiguration>(s, kRouteConfigurationType, "inferd_http");
  const auto& routes = rc.virtual_hosts(0).routes();
  ASSERT_EQ(routes.size(), 5);
  EXPECT_EQ(routes[0].match().path(), "/v2/models/resnet");
  EXPECT_EQ(routes[1].match().prefix(), "/v2/models/resnet/");
  EXPECT_EQ(routes[1].route().cluster(), "inferd_http/resnet");
  EXPECT_EQ(routes[4].route().cluster(), "inferd_http");
  auto cla =
      Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType, "inferd_http/simple");
  EXPECT_EQ(cla.endpoints(0).lb_endpoints(0).endpoint().address().socket_address().port_value(),
            8000u);
  auto c = Decode<cluster::Cluster>(s, kClusterType, "inferd_http");
  envoy::extensions::upstreams::http::v3::HttpProtocolOptions http;
  ASSERT_TRUE(
      http.ParseFromString(c.typed_extension_protocol_options().at(kHttpOptionsKey).value()));
  EXPECT_TRUE(http.explicit_http_config().has_http_protocol_options());  // HTTP/1.1 upstream
}

TEST_F(SnapshotBuilderTest, LingeringModelsKeepAnEmptyClusterButNoRoute) {
  const XdsSnapshot s = BuildSnapshot(hosts_, {"gone"}, options_);
  auto cla = Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType, "inferd/gone");
  EXPECT_EQ(cla.endpoints_size(), 0);
  auto rc = Decode<route::RouteConfiguration>(s, kRouteConfigurationType, "inferd");
  for (const auto& r : rc.virtual_hosts(0).routes()) EXPECT_NE(r.route().cluster(), "inferd/gone");
}

TEST_F(SnapshotBuilderTest, NoReadyHostIsAnEmptyFleetNotAnError) {
  const XdsSnapshot s = BuildSnapshot({Host("10.0.0.3", 8001, false, {"simple"})}, {}, options_);
  EXPECT_EQ(Names(s, kClusterType), std::vector<std::string>{"inferd"});
  EXPECT_EQ(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType, "inferd")
                .endpoints_size(),
            0);
}

TEST_F(SnapshotBuilderTest, SameInputSameBytes) {
  options_.http_port = 8000;
  const XdsSnapshot a = BuildSnapshot(hosts_, {"gone"}, options_);
  const XdsSnapshot b = BuildSnapshot(hosts_, {"gone"}, options_);
  EXPECT_EQ(a.resources, b.resources);
  hosts_[1].weight = 41;
  const XdsSnapshot c = BuildSnapshot(hosts_, {"gone"}, options_);
  EXPECT_EQ(a.Of(kListenerType), c.Of(kListenerType));
  EXPECT_EQ(a.Of(kClusterType), c.Of(kClusterType));
  EXPECT_NE(a.Of(kClusterLoadAssignmentType), c.Of(kClusterLoadAssignmentType));
}

TEST_F(SnapshotBuilderTest, HostsOfEqualWeightShareALocality) {
  hosts_[1].weight = 100;
  hosts_.push_back(Host("10.0.0.4", 8001, true, {"simple"}, 30));
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  auto cla = Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType, "inferd");
  ASSERT_EQ(cla.endpoints_size(), 2);
  EXPECT_EQ(cla.endpoints(0).lb_endpoints_size(), 2);  // the two hosts of weight 100
  EXPECT_EQ(cla.endpoints(0).load_balancing_weight().value(), 200u);
  EXPECT_EQ(cla.endpoints(1).load_balancing_weight().value(), 30u);
  using E = std::vector<std::pair<std::string, uint32_t>>;
  EXPECT_EQ(Endpoints(cla),
            (E{{"10.0.0.1:8001", 100}, {"10.0.0.2:8001", 100}, {"10.0.0.4:8001", 30}}));
}

TEST_F(SnapshotBuilderTest, AHostNamedTwiceIsOneEndpoint) {
  HostStatus by_name = Host("10.0.0.1", 8001, true, {"simple"}, 100);
  by_name.endpoint.host = "inferd-0.inferd";  // resolves to the address of hosts_[0]
  hosts_.push_back(by_name);
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  using E = std::vector<std::pair<std::string, uint32_t>>;
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/simple")),
            (E{{"10.0.0.1:8001", 100}, {"10.0.0.2:8001", 40}}));
}

TEST_F(SnapshotBuilderTest, AModelOnlyUnloadingStaysRoutedToItsHostsUntilGone) {
  hosts_[1].unloading_models = {"leaving", "resnet"};  // resnet is READY on hosts_[0]
  const XdsSnapshot s = BuildSnapshot(hosts_, {}, options_);
  using E = std::vector<std::pair<std::string, uint32_t>>;
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/leaving")),
            (E{{"10.0.0.2:8001", 40}}));
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/resnet")),
            (E{{"10.0.0.1:8001", 100}}));  // READY hosts only, while there are some
}

TEST_F(SnapshotBuilderTest, AThousandHostsInOneAssignment) {
  std::vector<HostStatus> many;
  for (int i = 0; i < 1000; ++i) {
    many.push_back(Host("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250), 8001,
                        true, {"simple"}, 10 + i % 91));
  }
  const XdsSnapshot s = BuildSnapshot(many, {}, options_);
  EXPECT_EQ(Endpoints(Decode<endpoint::ClusterLoadAssignment>(s, kClusterLoadAssignmentType,
                                                              "inferd/simple"))
                .size(),
            1000u);
}

}  // namespace
}  // namespace inferd::discovery
