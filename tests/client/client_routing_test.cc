// libinferclient's routing header: GrpcClient sends `inferd-model: <model>`
// with every model-scoped call and stream that knows its model, and nothing
// else does; the helpers of inferd/client/routing.h. Against
// RecordingInferenceServer (no inferd).
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "discovery/snapshot_builder.h"
#include "inferd/client/grpc_client.h"
#include "inferd/client/routing.h"
#include "recording_inference_server.h"

namespace inferd::client {
namespace {

using Calls = std::vector<testing::RecordingInferenceServer::Call>;
using Models = std::vector<std::string>;

InferRequest For(const std::string& model) {
  InferRequest r;
  r.model = model;
  return r;
}

TEST(Routing, HeaderNameIsTheOneDiscoveryRoutesOn) {
  EXPECT_STREQ(kModelHeader, discovery::kModelHeader);
}

TEST(Routing, XdsTargets) {
  EXPECT_TRUE(IsXdsTarget("xds:///inferd"));
  EXPECT_TRUE(IsXdsTarget("xds://authority/inferd"));
  EXPECT_FALSE(IsXdsTarget("localhost:8001"));
  EXPECT_FALSE(IsXdsTarget("grpc://localhost:8001"));
  EXPECT_FALSE(IsXdsTarget("dns:///xds:8001"));
  EXPECT_FALSE(IsXdsTarget(""));
}

TEST(Routing, ModelNamesThatCanBeMetadata) {
  EXPECT_TRUE(IsRoutableModelName("simple"));
  EXPECT_TRUE(IsRoutableModelName("my model/v2 (fp16)"));
  EXPECT_FALSE(IsRoutableModelName(""));
  EXPECT_FALSE(IsRoutableModelName("tab\there"));
  EXPECT_FALSE(IsRoutableModelName("caf\xc3\xa9"));
}

class GrpcRouting : public ::testing::Test {
 protected:
  testing::RecordingInferenceServer server_;
};

TEST_F(GrpcRouting, ModelScopedCallsCarryTheModel) {
  GrpcClient c(server_.address());
  ASSERT_TRUE(c.SetupStatus().ok);
  bool flag = false;
  ModelMetadata md;
  std::string json;
  InferResult result;
  ASSERT_TRUE(c.ModelReady("a", "", flag).ok);
  ASSERT_TRUE(c.GetModelMetadata("b", "", md).ok);
  ASSERT_TRUE(c.GetModelConfig("c", "1", json).ok);
  ASSERT_TRUE(c.GetModelStatistics("d", "", json).ok);
  ASSERT_TRUE(c.Infer(For("e"), result).ok);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  c.AsyncInfer(For("f"), [&](ClientStatus st, InferResult) {
    EXPECT_TRUE(st.ok) << st.message;
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_one();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  const Calls calls = server_.TakeCalls();
  ASSERT_EQ(calls.size(), 6u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"ModelReady", "a"},      {"ModelMetadata", "b"}, {"ModelConfig", "c"},
      {"ModelStatistics", "d"}, {"ModelInfer", "e"},    {"ModelInfer", "f"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(calls[i].method, want[i].first);
    EXPECT_EQ(calls[i].model_headers, Models{want[i].second}) << calls[i].method;
  }
}

TEST_F(GrpcRouting, OtherCallsCarryNone) {
  GrpcClient c("grpc://" + server_.address());
  bool live = false;
  std::string json;
  ASSERT_TRUE(c.ServerLive(live).ok);
  ASSERT_TRUE(c.GetModelStatistics("", "", json).ok);  // every model
  ASSERT_TRUE(c.LoadModel("a").ok);                    // one server's repository
  for (const auto& call : server_.TakeCalls())
    EXPECT_EQ(call.model_headers, Models{}) << call.method;
}

TEST_F(GrpcRouting, CustomHeaderWinsAndUnsendableNamesGoWithout) {
  GrpcClient custom(server_.address(), ClientOptions{.headers = {{"Inferd-Model", "pinned"}}});
  InferResult result;
  ASSERT_TRUE(custom.Infer(For("e"), result).ok);
  GrpcClient plain(server_.address());
  ASSERT_TRUE(plain.Infer(For("caf\xc3\xa9"), result).ok);
  const Calls calls = server_.TakeCalls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].model_headers, Models{"pinned"});
  EXPECT_EQ(calls[1].model_headers, Models{});
}

TEST_F(GrpcRouting, StreamCarriesTheModelItWasOpenedFor) {
  GrpcClient c(server_.address());
  for (const std::string model : {"s", ""}) {
    int answers = 0;
    auto stream =
        c.StartStream([&](ClientStatus st, InferResult) { answers += st.ok ? 1 : 0; }, model);
    ASSERT_TRUE(stream->Send(For("s")).ok);
    ASSERT_TRUE(stream->Close().ok);
    EXPECT_EQ(answers, 1);
    const Calls calls = server_.TakeCalls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].model_headers, model.empty() ? Models{} : Models{model});
  }
}

}  // namespace
}  // namespace inferd::client
