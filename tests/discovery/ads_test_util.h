// Test scaffolding for the ADS server: a real grpc::Server on 127.0.0.1:0
// with an AdsServer, client streams on generated stubs whose responses a
// reader thread queues (so tests wait with deadlines), snapshot and request
// builders.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "discovery/ads_server.h"
#include "discovery/xds_snapshot.h"
#include "envoy_discovery.grpc.pb.h"

namespace inferd::discovery::testing {

using envoy::service::discovery::v3::AggregatedDiscoveryService;
using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;
using std::chrono::seconds;

inline const std::string kLds(kListenerType);
inline const std::string kRds(kRouteConfigurationType);
inline const std::string kCds(kClusterType);
inline const std::string kEds(kClusterLoadAssignmentType);

// Waits for `condition`, polling, for at most `timeout`.
inline bool WaitUntil(const std::function<bool()>& condition, seconds timeout = seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// One ADS stream from the client side.
class ClientStream {
 public:
  // `read`: false for a client that never reads its responses.
  ClientStream(AggregatedDiscoveryService::Stub& stub, bool read = true) {
    stream_ = stub.StreamAggregatedResources(&context_);
    if (read) reader_ = std::thread([this] { ReadAll(); });
  }
  ~ClientStream() {
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
  }

  bool Send(const DiscoveryRequest& request) { return stream_->Write(request); }

  // The next response, or nullopt when none came within `timeout` or the
  // stream ended.
  std::optional<DiscoveryResponse> Next(seconds timeout = seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !queue_.empty() || ended_; });
    if (queue_.empty()) return std::nullopt;
    DiscoveryResponse response = std::move(queue_.front());
    queue_.pop_front();
    return response;
  }

  // The final status, once the stream ended (nullopt after `timeout`).
  std::optional<grpc::Status> WaitEnd(seconds timeout = seconds(10)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return ended_; })) return std::nullopt;
    return status_;
  }

 private:
  void ReadAll() {
    DiscoveryResponse response;
    while (stream_->Read(&response)) {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(response);
      cv_.notify_all();
    }
    grpc::Status status = stream_->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    status_ = status;
    cv_.notify_all();
  }

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<DiscoveryRequest, DiscoveryResponse>> stream_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<DiscoveryResponse> queue_;
  bool ended_ = false;
  grpc::Status status_;
};

// An AdsServer behind a real gRPC server on a loopback port.
class AdsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ads_ = std::make_unique<AdsServer>(AdsServerOptions{.control_plane_id = "test-cp"});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(ads_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = AggregatedDiscoveryService::NewStub(channel_);
  }

  void TearDown() override { StopServer(); }

  void StopServer() {
    if (server_ == nullptr) return;
    ads_->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(30));
    server_.reset();
  }

  std::unique_ptr<ClientStream> Open(bool read = true) {
    return std::make_unique<ClientStream>(*stub_, read);
  }

  // The counters of `type_url`.
  AdsTypeCounters Counters(const std::string& type_url) {
    AdsStats stats = ads_->Stats();
    auto it = stats.by_type.find(type_url);
    return it == stats.by_type.end() ? AdsTypeCounters{} : it->second;
  }

  std::unique_ptr<AdsServer> ads_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<AggregatedDiscoveryService::Stub> stub_;
};

// Snapshot builder: Add(type, name, bytes[, in_wildcard]).
class SnapshotBuilder {
 public:
  SnapshotBuilder& Add(const std::string& type_url, const std::string& name,
                       const std::string& bytes, bool in_wildcard = true) {
    snapshot_.resources[type_url][name] = XdsResource{.bytes = bytes, .in_wildcard = in_wildcard};
    return *this;
  }
  std::shared_ptr<const XdsSnapshot> Build() const {
    return std::make_shared<const XdsSnapshot>(snapshot_);
  }

 private:
  XdsSnapshot snapshot_;
};

struct RequestSpec {
  std::string type_url;
  std::vector<std::string> names = {};
  std::string version = {};
  std::string nonce = {};
  std::optional<std::string> nack = std::nullopt;  // error_detail.message
  std::string node_id = {};
};

inline DiscoveryRequest Request(const RequestSpec& spec) {
  DiscoveryRequest request;
  request.set_type_url(spec.type_url);
  for (const std::string& name : spec.names) request.add_resource_names(name);
  request.set_version_info(spec.version);
  request.set_response_nonce(spec.nonce);
  if (spec.nack.has_value()) {
    request.mutable_error_detail()->set_code(3);
    request.mutable_error_detail()->set_message(*spec.nack);
  }
  if (!spec.node_id.empty()) {
    request.mutable_node()->set_id(spec.node_id);
    request.mutable_node()->set_user_agent_name("ads-test");
    request.mutable_node()->set_user_agent_version("1.0");
  }
  return request;
}

// The ACK of `response`, keeping `names`.
inline DiscoveryRequest Ack(const DiscoveryResponse& response, std::vector<std::string> names) {
  return Request({.type_url = response.type_url(),
                  .names = std::move(names),
                  .version = response.version_info(),
                  .nonce = response.nonce()});
}

// Resource names in a response (from the Any values, which the tests make
// start with "<name>=").
inline std::vector<std::string> Names(const DiscoveryResponse& response) {
  std::vector<std::string> names;
  for (const auto& any : response.resources()) {
    names.push_back(any.value().substr(0, any.value().find('=')));
  }
  return names;
}

}  // namespace inferd::discovery::testing
