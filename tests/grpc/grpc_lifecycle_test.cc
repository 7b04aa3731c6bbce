// gRPC end-to-end: start-up, flags and shutdown of a real inferd, one
// process per test.
#include <signal.h>

#include <thread>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;
using inference::ModelStreamInferResponse;

std::vector<std::string> BaseArgs(const TempRepository& repo) {
  return {"--model-repository", repo.path(), "--http-port",          "0",
          "--http-address",     "127.0.0.1", "--grpc-port",          "0",
          "--grpc-address",     "127.0.0.1", "--allow-metrics=false"};
}

std::vector<std::string> With(std::vector<std::string> args, std::vector<std::string> more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

class GrpcLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteTestRepository(repo_); }

  std::unique_ptr<InferdProcess> Launch(std::vector<std::string> extra = {}) {
    auto p = std::make_unique<InferdProcess>(With(BaseArgs(repo_), std::move(extra)));
    std::string error;
    EXPECT_TRUE(p->Start(&error)) << error;
    return p;
  }

  static std::unique_ptr<GRPCInferenceService::Stub> Connect(const InferdProcess& p) {
    return GRPCInferenceService::NewStub(GrpcServerTest::NewChannel(p.grpc_target()));
  }

  static ModelInferRequest Slow(const std::string& id) {
    ModelInferRequest r;
    r.set_model_name("slow");
    r.set_id(id);
    AddInput(r, "INPUT0", "FP32", {1});
    r.add_raw_input_contents(Bytes(std::vector<float>{4}));
    return r;
  }

  TempRepository repo_;
};

TEST_F(GrpcLifecycleTest, PortZeroPicksAFreePortAndStopsCleanly) {
  auto p = Launch();
  ASSERT_GT(p->grpc_port(), 0);
  EXPECT_NE(p->grpc_port(), p->http_port());
  auto stub = Connect(*p);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  inference::ServerLiveResponse live;
  ASSERT_GRPC_OK(stub->ServerLive(&ctx, {}, &live));
  EXPECT_EQ(p->Stop(), 0) << p->Log();
}

TEST_F(GrpcLifecycleTest, PortInUseFailsStartUp) {
  auto first = Launch();
  ASSERT_GT(first->grpc_port(), 0);
  auto args = With(BaseArgs(repo_), {"--grpc-port", std::to_string(first->grpc_port())});
  InferdProcess second(args);
  std::string error;
  EXPECT_FALSE(second.Start(&error));
  EXPECT_EQ(second.WaitExit(10000), 1);
  EXPECT_NE(second.Log().find("failed to listen"), std::string::npos) << second.Log();
  EXPECT_EQ(first->Stop(), 0);
}

TEST_F(GrpcLifecycleTest, AllowGrpcFalse) {
  InferdProcess p(With(BaseArgs(repo_), {"--allow-grpc=false"}));
  std::string error;
  ASSERT_TRUE(p.Start(&error, /*want_grpc=*/false)) << error;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(p.Log().find("gRPC"), std::string::npos) << p.Log();
  EXPECT_EQ(p.Stop(), 0);
}

TEST_F(GrpcLifecycleTest, KeepaliveFlagsAccepted) {
  auto p = Launch(
      {"--grpc-keepalive-time=10000", "--grpc-keepalive-timeout=5000",
       "--grpc-keepalive-permit-without-calls=true", "--grpc-http2-max-pings-without-data=0",
       "--grpc-http2-min-recv-ping-interval-without-data=5000", "--grpc-http2-max-ping-strikes=0"});
  auto stub = Connect(*p);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  ModelInferResponse r;
  ASSERT_GRPC_OK(stub->ModelInfer(&ctx, SimpleRequest(1), &r));
  EXPECT_EQ(p->Stop(), 0);
}

TEST_F(GrpcLifecycleTest, BadFlagValuesNameTheFlag) {
  for (const char* flag :
       {"--grpc-keepalive-time=abc", "--grpc-port=70000",
        "--grpc-keepalive-permit-without-calls=maybe", "--grpc-http2-max-ping-strikes=-1"}) {
    InferdProcess p(With(BaseArgs(repo_), {flag}));
    std::string error;
    EXPECT_FALSE(p.Start(&error));
    EXPECT_EQ(p.WaitExit(10000), 2) << flag;
    const std::string name = std::string(flag).substr(0, std::string(flag).find('='));
    EXPECT_NE(p.Log().find(name), std::string::npos) << p.Log();
  }
}

TEST_F(GrpcLifecycleTest, ShutdownCompletesInFlightUnaryCalls) {
  auto p = Launch();
  auto stub = Connect(*p);
  {
    // Connected before the calls start, so that they reach the server well
    // before the signal even on a loaded machine (sanitizer builds).
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    inference::ServerLiveResponse live;
    ASSERT_GRPC_OK(stub->ServerLive(&ctx, inference::ServerLiveRequest(), &live));
  }
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext ctx;
      SetDeadline(ctx);
      ModelInferResponse r;
      if (stub->ModelInfer(&ctx, Slow(std::to_string(i)), &r).ok() && r.id() == std::to_string(i)) {
        ++ok;
      }
    });
  }
  // Each takes 300 ms: the signal comes while they are queued or running.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  p->Signal(SIGTERM);
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3) << p->Log();  // well inside the exit timeout
  EXPECT_EQ(p->WaitExit(20000), 0) << p->Log();
}

TEST_F(GrpcLifecycleTest, ShutdownEndsOpenStreamsAfterWhatTheyOwe) {
  auto p = Launch();
  auto stub = Connect(*p);
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  auto stream = stub->ModelStreamInfer(&ctx);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Write(Slow(std::to_string(i))));
  ModelStreamInferResponse r;
  ASSERT_TRUE(stream->Read(&r));  // ~300 ms: the server has read all three by now
  EXPECT_EQ(r.infer_response().id(), "0");
  const auto start = std::chrono::steady_clock::now();
  p->Signal(SIGTERM);
  // The stream is left open by the client; the server still writes the two
  // responses it owes, then ends the stream, without waiting for the 30 s
  // exit timeout.
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(stream->Read(&r)) << i;
    EXPECT_EQ(r.infer_response().id(), std::to_string(i));
    EXPECT_EQ(r.error_message(), "");
  }
  EXPECT_FALSE(stream->Read(&r));
  EXPECT_TRUE(HasError(stream->Finish(), StatusCode::UNAVAILABLE, "shutting down"));
  EXPECT_EQ(p->WaitExit(20000), 0) << p->Log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(GrpcLifecycleTest, IdleStreamDoesNotDelayShutdown) {
  auto p = Launch();
  auto stub = Connect(*p);
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  auto stream = stub->ModelStreamInfer(&ctx);
  ASSERT_TRUE(stream->Write(SimpleRequest(1, "only")));
  ModelStreamInferResponse r;
  ASSERT_TRUE(stream->Read(&r));
  const auto start = std::chrono::steady_clock::now();
  p->Signal(SIGTERM);
  EXPECT_FALSE(stream->Read(&r));
  EXPECT_TRUE(HasError(stream->Finish(), StatusCode::UNAVAILABLE));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(p->WaitExit(20000), 0) << p->Log();
  // The process itself may take a few seconds more: gRPC keeps the server
  // until the client's (now idle) connection goes, bounded by the exit timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
}

TEST_F(GrpcLifecycleTest, ExitTimeoutCancelsWhatIsLeft) {
  // With a 1 s exit timeout, a stream kept busy past it is cancelled and the
  // server still exits 0.
  auto p = Launch({"--exit-timeout-secs=1"});
  auto stub = Connect(*p);
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  auto stream = stub->ModelStreamInfer(&ctx);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(stream->Write(Slow(std::to_string(i))));  // 3.6 s
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  p->Signal(SIGTERM);
  ModelStreamInferResponse r;
  int n = 0;
  while (stream->Read(&r)) ++n;
  EXPECT_LT(n, 12);
  EXPECT_FALSE(stream->Finish().ok());
  EXPECT_EQ(p->WaitExit(20000), 0) << p->Log();
}

TEST_F(GrpcLifecycleTest, NotReadyWhileShuttingDown) {
  auto p = Launch();
  auto stub = Connect(*p);
  auto health = grpc::health::v1::Health::NewStub(GrpcServerTest::NewChannel(p->grpc_target()));
  // A slow call keeps the server in its shutdown phase for a moment.
  std::thread slow([&] {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    ModelInferResponse r;
    stub->ModelInfer(&ctx, Slow("s"), &r);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  p->Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // New calls are refused once gRPC shuts down; any answer must say "not ready".
  grpc::ClientContext ctx;
  SetDeadline(ctx, 2000);
  grpc::health::v1::HealthCheckResponse h;
  const grpc::Status s = health->Check(&ctx, {}, &h);
  if (s.ok()) {
    EXPECT_EQ(h.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  }
  slow.join();
  EXPECT_EQ(p->WaitExit(20000), 0) << p->Log();
}

}  // namespace
}  // namespace inferd::testing
