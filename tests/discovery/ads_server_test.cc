// The ADS server over real gRPC (loopback): the state-of-the-world rules of
// PROTOCOL-NEXT §5.5, slow clients and shutdown. Resource bytes are opaque
// to the server, so most tests use "<name>=<content>" strings; the large
// endpoint list is a real ClusterLoadAssignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "ads_test_util.h"
#include "envoy_endpoint.pb.h"

namespace inferd::discovery::testing {
namespace {

TEST_F(AdsFixture, FirstRequestGetsVersionNonceAndTypedAnys) {
  ads_->Publish(SnapshotBuilder().Add(kLds, "a", "a=1").Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kLds, .names = {"a"}, .node_id = "node-1"})));
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->type_url(), kLds);
  EXPECT_EQ(response->version_info(), ads_->Version(kLds));
  EXPECT_EQ(response->version_info().size(), 16u);
  EXPECT_FALSE(response->nonce().empty());
  EXPECT_EQ(response->control_plane().identifier(), "test-cp");
  ASSERT_EQ(response->resources_size(), 1);
  EXPECT_EQ(response->resources(0).type_url(), kLds);
  EXPECT_EQ(response->resources(0).value(), "a=1");

  ASSERT_TRUE(client->Send(Ack(*response, {"a"})));
  ASSERT_TRUE(WaitUntil([&] { return Counters(kLds).acks == 1; }));
  AdsStats stats = ads_->Stats();
  EXPECT_EQ(stats.connected_streams, 1u);
  EXPECT_EQ(Counters(kLds).responses, 1u);
  ASSERT_EQ(stats.clients.size(), 1u);
  EXPECT_EQ(stats.clients[0].node_id, "node-1");
  EXPECT_EQ(stats.clients[0].user_agent_name, "ads-test");
  ASSERT_EQ(stats.clients[0].types.size(), 1u);
  EXPECT_EQ(stats.clients[0].types[0].subscribed_names, 1u);
  EXPECT_EQ(stats.clients[0].types[0].acked_version, response->version_info());
}

TEST_F(AdsFixture, NothingBeforeTheFirstPublish) {
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kCds})));
  ASSERT_TRUE(WaitUntil([&] { return ads_->Stats().clients.size() == 1; }));
  EXPECT_EQ(ads_->Version(kCds), "");
  ads_->Publish(SnapshotBuilder().Add(kCds, "c", "c=1").Build());
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->type_url(), kCds);
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"c"}));
}

TEST_F(AdsFixture, PublishPushesOnlyTheChangedType) {
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=1").Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kLds, .node_id = "n"})));
  ASSERT_TRUE(client->Send(Request({.type_url = kCds})));
  auto first = client->Next();
  auto second = client->Next();
  ASSERT_TRUE(first && second);
  ASSERT_TRUE(client->Send(Ack(*first, {})));
  ASSERT_TRUE(client->Send(Ack(*second, {})));
  ASSERT_TRUE(WaitUntil([&] { return Counters(kLds).acks + Counters(kCds).acks == 2; }));

  std::string lds_version = ads_->Version(kLds);
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=1").Add(kCds, "c", "c=2").Build());
  EXPECT_EQ(ads_->Version(kLds), lds_version);
  auto cds = client->Next();
  ASSERT_TRUE(cds.has_value());
  EXPECT_EQ(cds->type_url(), kCds);
  EXPECT_EQ(cds->version_info(), ads_->Version(kCds));
  EXPECT_NE(cds->nonce(), second->nonce());
  EXPECT_EQ(cds->resources(0).value(), "c=2");

  // The same content again: nothing. Then a Listener change: the next
  // response is that one (nothing was sent in between).
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=1").Add(kCds, "c", "c=2").Build());
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=2").Add(kCds, "c", "c=2").Build());
  auto lds = client->Next();
  ASSERT_TRUE(lds.has_value());
  EXPECT_EQ(lds->type_url(), kLds);
  EXPECT_EQ(lds->resources(0).value(), "l=2");
  EXPECT_EQ(Counters(kCds).responses, 2u);
}

TEST_F(AdsFixture, NackIsCountedKeepsTheAckedVersionAndIsNotResent) {
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=1").Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kLds, .names = {"l"}, .node_id = "nacker"})));
  auto v1 = client->Next();
  ASSERT_TRUE(v1.has_value());
  ASSERT_TRUE(client->Send(Ack(*v1, {"l"})));
  ASSERT_TRUE(client->Send(Request({.type_url = kCds, .names = {"c"}})));
  auto cds = client->Next();
  ASSERT_TRUE(cds.has_value());
  ASSERT_TRUE(client->Send(Ack(*cds, {"c"})));

  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=bad").Add(kCds, "c", "c=1").Build());
  auto v2 = client->Next();
  ASSERT_TRUE(v2.has_value());
  ASSERT_EQ(v2->type_url(), kLds);
  ASSERT_TRUE(client->Send(Request({.type_url = kLds,
                                    .names = {"l"},
                                    .version = v1->version_info(),
                                    .nonce = v2->nonce(),
                                    .nack = "listener l: no router filter"})));
  ASSERT_TRUE(WaitUntil([&] { return Counters(kLds).nacks == 1; }));
  AdsStats stats = ads_->Stats();
  ASSERT_EQ(stats.clients.size(), 1u);
  auto lds_it = std::find_if(stats.clients[0].types.begin(), stats.clients[0].types.end(),
                             [](const AdsClientType& t) { return t.type_url == kLds; });
  ASSERT_NE(lds_it, stats.clients[0].types.end());
  const AdsClientType& lds = *lds_it;
  EXPECT_EQ(lds.acked_version, v1->version_info());
  EXPECT_EQ(lds.nacked_version, v2->version_info());
  EXPECT_EQ(lds.last_nack_error, "listener l: no router filter");

  // No resend of the rejected listener: the next response is the Cluster
  // change, then a fixed listener goes out.
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=bad").Add(kCds, "c", "c=2").Build());
  auto next = client->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), kCds);
  ads_->Publish(SnapshotBuilder().Add(kLds, "l", "l=fixed").Add(kCds, "c", "c=2").Build());
  next = client->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), kLds);
  EXPECT_EQ(next->resources(0).value(), "l=fixed");
  EXPECT_EQ(Counters(kLds).responses, 3u);
}

TEST_F(AdsFixture, StaleNonceIsIgnored) {
  ads_->Publish(
      SnapshotBuilder().Add(kEds, "a", "a=1").Add(kEds, "b", "b=1").Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kEds, .names = {"a"}, .node_id = "n"})));
  auto first = client->Next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(client->Send(Request({.type_url = kCds})));
  auto cds = client->Next();
  ASSERT_TRUE(cds.has_value());
  ads_->Publish(
      SnapshotBuilder().Add(kEds, "a", "a=2").Add(kEds, "b", "b=1").Add(kCds, "c", "c=1").Build());
  auto second = client->Next();
  ASSERT_TRUE(second.has_value());
  ASSERT_EQ(second->type_url(), kEds);

  // An answer to the first response, adding "b": stale, so "b" is not sent.
  ASSERT_TRUE(client->Send(Ack(*first, {"a", "b"})));
  ASSERT_TRUE(WaitUntil([&] { return Counters(kEds).stale == 1; }));
  EXPECT_EQ(Counters(kEds).acks, 0u);
  ads_->Publish(
      SnapshotBuilder().Add(kEds, "a", "a=2").Add(kEds, "b", "b=1").Add(kCds, "c", "c=2").Build());
  auto next = client->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), kCds);

  // The same request on the latest nonce subscribes to "b".
  ASSERT_TRUE(client->Send(Ack(*second, {"a", "b"})));
  next = client->Next();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->type_url(), kEds);
  EXPECT_EQ(Names(*next), (std::vector<std::string>{"a", "b"}));
}

TEST_F(AdsFixture, WildcardSelectsOnlyInWildcardResources) {
  ads_->Publish(SnapshotBuilder()
                    .Add(kLds, "envoy_listener", "envoy_listener=1")
                    .Add(kLds, "inferd:8001", "inferd:8001=api", /*in_wildcard=*/false)
                    .Build());
  auto envoy = Open();
  ASSERT_TRUE(envoy->Send(Request({.type_url = kLds, .node_id = "envoy"})));
  auto response = envoy->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"envoy_listener"}));

  auto grpc_client = Open();
  ASSERT_TRUE(grpc_client->Send(Request({.type_url = kLds, .names = {"inferd:8001"}})));
  response = grpc_client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"inferd:8001"}));

  auto both = Open();
  ASSERT_TRUE(both->Send(Request({.type_url = kLds, .names = {"*", "inferd:8001"}})));
  response = both->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"envoy_listener", "inferd:8001"}));
}

TEST_F(AdsFixture, MissingNamesAreSentOnceTheyExist) {
  ads_->Publish(SnapshotBuilder().Add(kCds, "other", "other=1").Build());
  auto client = Open();
  // EDS: nothing to say about a missing name.
  ASSERT_TRUE(client->Send(Request({.type_url = kEds, .names = {"c1"}, .node_id = "n"})));
  // LDS is complete: a missing name is answered (it does not exist).
  ASSERT_TRUE(client->Send(Request({.type_url = kLds, .names = {"x"}})));
  auto lds = client->Next();
  ASSERT_TRUE(lds.has_value());
  EXPECT_EQ(lds->type_url(), kLds);
  EXPECT_EQ(lds->resources_size(), 0);

  ads_->Publish(SnapshotBuilder()
                    .Add(kCds, "other", "other=1")
                    .Add(kEds, "c1", "c1=1")
                    .Add(kEds, "c2", "c2=1")
                    .Build());
  auto eds = client->Next();
  ASSERT_TRUE(eds.has_value());
  EXPECT_EQ(eds->type_url(), kEds);
  EXPECT_EQ(Names(*eds), (std::vector<std::string>{"c1"}));

  ads_->Publish(SnapshotBuilder()
                    .Add(kCds, "other", "other=1")
                    .Add(kEds, "c1", "c1=1")
                    .Add(kEds, "c2", "c2=1")
                    .Add(kLds, "x", "x=1")
                    .Build());
  lds = client->Next();
  ASSERT_TRUE(lds.has_value());
  EXPECT_EQ(lds->type_url(), kLds);
  EXPECT_EQ(Names(*lds), (std::vector<std::string>{"x"}));
}

TEST_F(AdsFixture, DroppingANameUnsubscribes) {
  auto snapshot = [](const std::string& c1, const std::string& c2) {
    return SnapshotBuilder().Add(kEds, "c1", "c1=" + c1).Add(kEds, "c2", "c2=" + c2).Build();
  };
  ads_->Publish(snapshot("1", "1"));
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kEds, .names = {"c1", "c2"}, .node_id = "n"})));
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"c1", "c2"}));
  ASSERT_TRUE(client->Send(Ack(*response, {"c1"})));
  ASSERT_TRUE(WaitUntil([&] {
    AdsStats stats = ads_->Stats();
    return !stats.clients.empty() && !stats.clients[0].types.empty() &&
           stats.clients[0].types[0].subscribed_names == 1;
  }));

  ads_->Publish(snapshot("1", "2"));  // c2 only: not subscribed any more
  ads_->Publish(snapshot("2", "2"));
  response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"c1"}));
  EXPECT_EQ(response->resources(0).value(), "c1=2");

  // Subscribing again gets c2 although its version did not change.
  ASSERT_TRUE(client->Send(Ack(*response, {"c1", "c2"})));
  response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(Counters(kEds).responses, 3u);
}

TEST_F(AdsFixture, ListenerResponsesAreComplete) {
  ads_->Publish(SnapshotBuilder().Add(kLds, "a", "a=1").Add(kLds, "b", "b=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kLds, .node_id = "envoy"})));
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(client->Send(Ack(*response, {})));  // Envoy keeps its empty list

  ads_->Publish(SnapshotBuilder().Add(kLds, "a", "a=1").Build());
  response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(Names(*response), (std::vector<std::string>{"a"}));  // b deleted
  ASSERT_TRUE(client->Send(Ack(*response, {})));

  ads_->Publish(std::make_shared<const XdsSnapshot>());
  response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->type_url(), kLds);
  EXPECT_EQ(response->resources_size(), 0);  // everything deleted
}

TEST_F(AdsFixture, ThousandEndpointsInOnePush) {
  envoy::config::endpoint::v3::ClusterLoadAssignment cla;
  cla.set_cluster_name("inferd");
  auto* locality = cla.add_endpoints();
  locality->mutable_load_balancing_weight()->set_value(1);
  for (int i = 0; i < 1000; ++i) {
    auto* socket = locality->add_lb_endpoints()
                       ->mutable_endpoint()
                       ->mutable_address()
                       ->mutable_socket_address();
    socket->set_address("10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250));
    socket->set_port_value(8001);
  }
  ads_->Publish(SnapshotBuilder().Add(kEds, "inferd", cla.SerializeAsString()).Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kEds, .names = {"inferd"}, .node_id = "n"})));
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  ASSERT_EQ(response->resources_size(), 1);
  envoy::config::endpoint::v3::ClusterLoadAssignment got;
  ASSERT_TRUE(response->resources(0).UnpackTo(&got));
  EXPECT_EQ(got.cluster_name(), "inferd");
  ASSERT_EQ(got.endpoints_size(), 1);
  EXPECT_EQ(got.endpoints(0).lb_endpoints_size(), 1000);
}

TEST_F(AdsFixture, ClientThatNeverReadsDoesNotHoldBackOthers) {
  // 3 MiB per resource (under gRPC clients' 4 MiB receive limit): the
  // stuck client's flow-control windows fill after a write or two.
  auto snapshot = [](int generation) {
    std::string big(3 << 20, static_cast<char>('a' + generation % 26));
    return SnapshotBuilder()
        .Add(kEds, "big", "big=" + big)
        .Add(kEds, "small", "small=" + std::to_string(generation))
        .Build();
  };
  ads_->Publish(snapshot(0));
  auto stuck = Open(/*read=*/false);
  ASSERT_TRUE(stuck->Send(Request({.type_url = kEds, .names = {"big"}, .node_id = "stuck"})));
  auto reader = Open();
  ASSERT_TRUE(reader->Send(Request({.type_url = kEds, .names = {"small"}, .node_id = "reader"})));
  auto response = reader->Next();
  ASSERT_TRUE(response.has_value());
  ASSERT_TRUE(WaitUntil([&] { return Counters(kEds).responses == 2; }));

  for (int generation = 1; generation <= 20; ++generation) {
    ads_->Publish(snapshot(generation));
    response = reader->Next();
    ASSERT_TRUE(response.has_value()) << "generation " << generation;
    EXPECT_EQ(response->resources(0).value(), "small=" + std::to_string(generation));
    ASSERT_TRUE(reader->Send(Ack(*response, {"small"})));
  }
  // The stuck stream is still there and got a few writes started, not 21.
  AdsStats stats = ads_->Stats();
  EXPECT_EQ(stats.connected_streams, 2u);
  EXPECT_LT(Counters(kEds).responses, 2u + 20u + 10u);
}

// Streams ending (OnDone) while Publish and Stats hold them: run under
// ASan/TSan this is the use-after-free check of the stream registry.
TEST_F(AdsFixture, StreamsEndWhilePublishing) {
  auto snapshot = [](int generation) {
    return SnapshotBuilder()
        .Add(kCds, "c", "c=" + std::to_string(generation))
        .Add(kEds, "c", "c=" + std::to_string(generation))
        .Build();
  };
  ads_->Publish(snapshot(0));
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    for (int generation = 1; !stop; ++generation) {
      ads_->Publish(snapshot(generation));
      (void)ads_->Stats();
    }
  });
  for (int i = 0; i < 20; ++i) {
    // EXPECT, not ASSERT: the publisher must be joined.
    auto client = Open(/*read=*/i % 2 == 0);
    EXPECT_TRUE(client->Send(Request({.type_url = kCds, .node_id = "n" + std::to_string(i)})));
    EXPECT_TRUE(client->Send(Request({.type_url = kEds, .names = {"c"}})));
    if (i % 2 == 0) {
      EXPECT_TRUE(client->Next().has_value());
    }
  }  // each client cancels its stream as it goes
  stop = true;
  publisher.join();
  EXPECT_TRUE(WaitUntil([&] { return ads_->Stats().connected_streams == 0; }));
}

TEST_F(AdsFixture, ShutdownWithOpenStreamsDoesNotHang) {
  // A client that never reads 3 MiB pushes: a write stays in flight.
  auto snapshot = [](char fill) {
    return SnapshotBuilder()
        .Add(kEds, "big", "big=" + std::string(3 << 20, fill))
        .Add(kCds, "c", "c=1")
        .Build();
  };
  ads_->Publish(snapshot('a'));
  auto stuck = Open(/*read=*/false);
  ASSERT_TRUE(stuck->Send(Request({.type_url = kEds, .names = {"big"}, .node_id = "stuck"})));
  auto idle = Open();
  ASSERT_TRUE(idle->Send(Request({.type_url = kCds, .node_id = "idle"})));
  ASSERT_TRUE(idle->Next().has_value());
  ASSERT_TRUE(WaitUntil([&] { return Counters(kEds).responses == 1; }));
  ads_->Publish(snapshot('b'));
  ads_->Publish(snapshot('c'));
  ASSERT_TRUE(WaitUntil([&] { return Counters(kEds).responses >= 2; }));

  auto start = std::chrono::steady_clock::now();
  StopServer();  // ads Shutdown, then grpc::Server::Shutdown with a 30 s deadline
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  auto status = idle->WaitEnd();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(AdsFixture, NewStreamAfterShutdownIsRefused) {
  ads_->Shutdown();
  auto client = Open();
  client->Send(Request({.type_url = kCds}));
  auto status = client->WaitEnd();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(AdsFixture, RequestWithoutTypeUrlEndsTheStream) {
  ads_->Publish(SnapshotBuilder().Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = "", .node_id = "broken"})));
  auto status = client->WaitEnd();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ads_->Stats().invalid_requests, 1u);
}

TEST_F(AdsFixture, ManyResourceTypesEndTheStream) {
  ads_->Publish(SnapshotBuilder().Add(kCds, "c", "c=1").Build());
  auto client = Open();
  // Types nothing is served for get no answer; the seventeenth ends the stream.
  for (int i = 0; i < 17; ++i) {
    if (!client->Send(Request({.type_url = "type.googleapis.com/x.T" + std::to_string(i)}))) break;
  }
  auto status = client->WaitEnd();
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status->error_message().find("too many resource types"), std::string::npos);
}

TEST_F(AdsFixture, ReconnectAtTheCurrentVersionIsNotResent) {
  ads_->Publish(SnapshotBuilder().Add(kCds, "c", "c=1").Build());
  auto client = Open();
  ASSERT_TRUE(client->Send(Request({.type_url = kCds, .version = ads_->Version(kCds)})));
  ASSERT_TRUE(WaitUntil([&] {
    AdsStats stats = ads_->Stats();
    return !stats.clients.empty() && !stats.clients[0].types.empty();
  }));
  ads_->Publish(SnapshotBuilder().Add(kCds, "c", "c=2").Build());
  auto response = client->Next();
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->resources(0).value(), "c=2");  // the first response is the new one
  EXPECT_EQ(Counters(kCds).responses, 1u);
}

}  // namespace
}  // namespace inferd::discovery::testing
