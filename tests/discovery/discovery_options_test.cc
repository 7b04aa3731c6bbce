// inferd-discovery's command line: every flag form and every refusal.
#include "discovery/discovery_options.h"

#include <gtest/gtest.h>

namespace inferd::discovery {
namespace {

TEST(DiscoveryFlags, BothFlagFormsAndRepeatableSources) {
  auto o = ParseDiscoveryFlags(
      {"--xds-port=19000", "--http-port", "0", "--hosts=10.0.0.1:8001", "--hosts", "10.0.0.2:8001",
       "--hosts-file=/etc/h", "--dns=inferd-headless:8001", "--kubernetes-service=ns/inferd:grpc",
       "--poll-interval-ms=250", "--probe-header=Triton-GRPC-Protocol-K: v", "--fleet-name=prod",
       "--inferd-http-port=8000", "--zone=z1", "--linger-rounds=2"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->xds_port, 19000);
  EXPECT_EQ(o->http_port, 0);
  EXPECT_EQ(o->sources.hosts, (std::vector<std::string>{"10.0.0.1:8001", "10.0.0.2:8001"}));
  EXPECT_EQ(o->sources.hosts_files, std::vector<std::string>{"/etc/h"});
  EXPECT_EQ(o->sources.dns, std::vector<std::string>{"inferd-headless:8001"});
  EXPECT_EQ(o->sources.kubernetes_services, std::vector<std::string>{"ns/inferd:grpc"});
  EXPECT_EQ(o->sources.interval.count(), 250);  // the poll interval
  EXPECT_EQ(o->loop.poll_interval.count(), 250);
  EXPECT_EQ(o->loop.prober.timeout.count(), 250);  // defaults to the interval
  ASSERT_EQ(o->loop.prober.metadata.size(), 1u);
  EXPECT_EQ(o->loop.prober.metadata[0].first, "triton-grpc-protocol-k");
  EXPECT_EQ(o->loop.prober.metadata[0].second, "v");
  EXPECT_EQ(o->loop.snapshot.fleet_name, "prod");
  EXPECT_EQ(o->loop.snapshot.http_port, 8000u);
  EXPECT_EQ(o->loop.snapshot.zone, "z1");
  EXPECT_EQ(o->loop.linger_rounds, 2);
}

TEST(DiscoveryFlags, ProbeTimeoutIsAtMostTwoSecondsUnlessGiven) {
  auto o = ParseDiscoveryFlags({"--hosts=h:1", "--poll-interval-ms=10000"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->loop.prober.timeout.count(), 2000);
  o = ParseDiscoveryFlags({"--hosts=h:1", "--poll-interval-ms=10000", "--probe-timeout-ms=5000"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->loop.prober.timeout.count(), 5000);
}

TEST(DiscoveryFlags, Help) {
  auto o = ParseDiscoveryFlags({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
}

TEST(DiscoveryFlags, RefusalsNameTheProblem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{}, "no source of hosts"},
      {{"--xds-port=8001"}, "no source of hosts"},
      {{"--hosts=h:1", "--xds-port=70000"}, "--xds-port: wants an integer from 0 to 65535"},
      {{"--hosts=h:1", "--xds-port=x"}, "got 'x'"},
      {{"--hosts=h:1", "--poll-interval-ms=5"}, "--poll-interval-ms"},
      {{"--hosts=h:1", "--envoy-grpc-port=0"}, "--envoy-grpc-port"},
      {{"--hosts=h:1", "--fleet-name=a/b"}, "without '/'"},
      {{"--hosts=h:1", "--probe-header=novalue"}, "is not 'name: value'"},
      {{"--hosts=h:1", "--probe-header=bad name: v"}, "is not [0-9a-z_.-]"},
      {{"--hosts=h:1", "--nope=1"}, "unknown flag --nope"},
      {{"--hosts"}, "missing value after --hosts"},
      {{"--hosts=h:1", "stray"}, "unexpected argument 'stray'"},
      {{"--hosts=h:1", "--inferd-http-port=8000", "--envoy-http-port=8001"},
       "Envoy's two listeners need two ports"},
  };
  for (const auto& [args, want] : bad) {
    auto o = ParseDiscoveryFlags(args);
    ASSERT_FALSE(o.ok()) << want;
    EXPECT_NE(o.status().message().find(want), std::string::npos)
        << o.status().message() << " should say " << want;
  }
}

}  // namespace
}  // namespace inferd::discovery
