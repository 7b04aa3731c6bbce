// The middleman's InferdPool sends `inferd-model: <model>` with every Call
// about one model (what infer-gateway's ModelMetadata and ModelInfer calls
// are), so that an xds:///inferd target or Envoy routes it to a host
// serving the model; against RecordingInferenceServer (no inferd).
#include <gtest/gtest.h>

#include <future>

#include "middleman/inferd_pool.h"
#include "recording_inference_server.h"

namespace inferd::middleman {
namespace {

using Async = InferdStub::async_interface;
using Models = std::vector<std::string>;

// gRPC 1.51 races when the last user of its callback completion queue goes
// away and the next one arrives at once (one test's pool destroyed, the next
// test's created): "ref_counted.h: assertion failed: prior > 0" in its
// nexting thread, about 1 run in 50 on a loaded machine. A channel that has
// made one callback call, kept for the whole run, holds the queue open.
class HoldCallbackQueue : public ::testing::Environment {
 public:
  void SetUp() override {
    channel_ = ::grpc::CreateChannel("127.0.0.1:1", ::grpc::InsecureChannelCredentials());
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
    inference::ServerLiveRequest request;
    inference::ServerLiveResponse response;
    std::promise<void> done;
    stub_->async()->ServerLive(&context, &request, &response,
                               [&done](const ::grpc::Status&) { done.set_value(); });
    done.get_future().wait();
  }

 private:
  std::shared_ptr<::grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};
const auto* const kHoldCallbackQueue = ::testing::AddGlobalTestEnvironment(new HoldCallbackQueue);

// Runs one Call and waits for its answer.
template <typename Request, typename Response>
::grpc::StatusCode CallAndWait(InferdPool& pool,
                               void (Async::*method)(::grpc::ClientContext*, const Request*,
                                                     Response*,
                                                     std::function<void(::grpc::Status)>),
                               Request request) {
  std::promise<::grpc::StatusCode> code;
  pool.Call<Request, Response>(
      method, std::move(request), {},
      [&](const ::grpc::Status& s, Response&) { code.set_value(s.error_code()); });
  return code.get_future().get();
}

TEST(RoutingModel, NamesTheModelOfModelScopedRequests) {
  inference::ModelInferRequest infer;
  infer.set_model_name("a");
  inference::ModelMetadataRequest metadata;
  metadata.set_name("b");
  inference::ModelStatisticsRequest stats;
  inference::SystemSharedMemoryRegisterRequest shm;
  shm.set_name("region");  // a region's name, not a model's
  EXPECT_EQ(RoutingModel(infer), "a");
  EXPECT_EQ(RoutingModel(metadata), "b");
  EXPECT_EQ(RoutingModel(stats), "");
  EXPECT_EQ(RoutingModel(shm), "");
  EXPECT_EQ(RoutingModel(inference::ServerReadyRequest{}), "");
}

TEST(InferdPoolRouting, ModelCallsCarryTheModelOthersNone) {
  testing::RecordingInferenceServer server;
  InferdPool pool({.url = server.address(), .channels = 2}, nullptr);
  inference::ModelInferRequest infer;
  infer.set_model_name("pipeline");
  inference::ModelMetadataRequest metadata;
  metadata.set_name("other");
  EXPECT_EQ(CallAndWait(pool, &Async::ModelInfer, infer), ::grpc::StatusCode::OK);
  EXPECT_EQ(CallAndWait(pool, &Async::ModelMetadata, metadata), ::grpc::StatusCode::OK);
  EXPECT_EQ(CallAndWait(pool, &Async::ServerLive, inference::ServerLiveRequest{}),
            ::grpc::StatusCode::OK);
  const auto calls = server.TakeCalls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].model_headers, Models{"pipeline"});
  EXPECT_EQ(calls[1].model_headers, Models{"other"});
  EXPECT_EQ(calls[2].model_headers, Models{});
}

TEST(InferdPoolRouting, ConfiguredHeaderIsSentOnce) {
  testing::RecordingInferenceServer server;
  InferdPool pool({.url = server.address(), .channels = 1, .metadata = {{"inferd-model", "pin"}}},
                  nullptr);
  inference::ModelInferRequest infer;
  infer.set_model_name("pipeline");
  EXPECT_EQ(CallAndWait(pool, &Async::ModelInfer, infer), ::grpc::StatusCode::OK);
  const auto calls = server.TakeCalls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].model_headers, Models{"pin"});
}

}  // namespace
}  // namespace inferd::middleman
