// The control plane (one rule set for both front ends) and its worker.
#include "server/control_plane.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "fake_device.h"
#include "server/inference_server.h"
#include "server/serial_worker.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

// ---- SerialWorker ----------------------------------------------------------------

// A `done` that records its status and the thread it ran on.
struct Answer {
  std::promise<std::pair<Status, std::thread::id>> promise;
  std::future<std::pair<Status, std::thread::id>> future = promise.get_future();
  SerialWorker::Done Callback() {
    return [this](Status s) { promise.set_value({std::move(s), std::this_thread::get_id()}); };
  }
  std::pair<Status, std::thread::id> Get() {
    EXPECT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    return future.get();
  }
};

TEST(SerialWorkerTest, RunsInOrderOffTheCallersThread) {
  SerialWorker worker;
  std::vector<int> order;
  Answer a, b;
  worker.Post(
      [&] {
        order.push_back(1);
        return Status::Ok();
      },
      a.Callback());
  worker.Post(
      [&] {
        order.push_back(2);
        return NotFound("second");
      },
      b.Callback());
  auto [sa, ta] = a.Get();
  auto [sb, tb] = b.Get();
  EXPECT_TRUE(sa.ok());
  EXPECT_EQ(sb.code(), StatusCode::kNotFound);
  EXPECT_EQ(sb.message(), "second");
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_NE(ta, std::this_thread::get_id());
  EXPECT_EQ(ta, tb);  // one thread
}

TEST(SerialWorkerTest, StopFinishesTheRunningWorkAndAnswersTheQueued) {
  SerialWorker worker;
  std::promise<void> started, release;
  auto released = release.get_future().share();
  std::atomic<bool> queued_ran{false};
  Answer running, queued, late;
  worker.Post(
      [&] {
        started.set_value();
        released.wait();
        return Status::Ok();
      },
      running.Callback());
  worker.Post(
      [&] {
        queued_ran = true;
        return Status::Ok();
      },
      queued.Callback());
  started.get_future().wait();
  std::thread stopper([&] { worker.Stop(); });
  // Stop waits for the running work; let it finish once Stop has begun.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.set_value();
  stopper.join();
  EXPECT_TRUE(running.Get().first.ok());
  Status q = queued.Get().first;
  EXPECT_EQ(q.code(), StatusCode::kUnavailable);
  EXPECT_EQ(q.message(), "server is shutting down");
  EXPECT_FALSE(queued_ran);

  // After Stop: answered at once, on the caller's thread, work not run.
  bool ran = false;
  worker.Post(
      [&] {
        ran = true;
        return Status::Ok();
      },
      late.Callback());
  ASSERT_EQ(late.future.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  auto [s, t] = late.Get();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(t, std::this_thread::get_id());
  EXPECT_FALSE(ran);
  worker.Stop();  // idempotent
}

// ---- ControlPlane ----------------------------------------------------------------

constexpr const char* kAddSub = R"(
backend: "add_sub"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
       { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
        { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }]
)";

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("inferd_cp_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "simple" / "1");
    std::ofstream(root_ / "simple" / "config.pbtxt") << kAddSub;
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }

  InferenceServer& Start(ModelControlMode mode, bool allow_shm, int gpus = 0) {
    ServerOptions o;
    o.repositories = {root_.string()};
    o.control_mode = mode;
    o.allow_client_shm = allow_shm;
    o.model_unload_delay_secs = unload_delay_secs_;
    auto device = std::make_shared<testing_fakes::FakeDevice>();
    device->devices = gpus;
    o.device_memory = device;
    server_ = std::make_unique<InferenceServer>(o, BackendRegistry::WithBuiltins());
    EXPECT_TRUE(server_->Start().ok());
    return *server_;
  }

  // Runs a call and returns what `done` got; `sync` says whether done ran
  // before the call returned.
  template <typename Call>
  Status Run(Call call, bool* sync = nullptr) {
    Answer a;
    call(a.Callback());
    if (sync) *sync = a.future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    return a.Get().first;
  }

  fs::path root_;
  int unload_delay_secs_ = 0;
  std::unique_ptr<InferenceServer> server_;
};

TEST_F(ControlPlaneTest, OneModelNameRule) {
  for (const char* good : {"simple", "resnet50.v1", "a-b_c"}) {
    EXPECT_TRUE(ControlPlane::CheckModelName(good).ok()) << good;
  }
  for (const std::string& bad : std::vector<std::string>{"..", "../x", "a/b", "a\\b", "x..y",
                                                         "a\nb", std::string(256, 'm')}) {
    Status s = ControlPlane::CheckModelName(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(s.message().rfind("invalid model name '", 0), 0u) << s.message();
  }
  EXPECT_NE(ControlPlane::CheckModelName("a\nb").message().find("'a\\nb'"), std::string::npos);
  EXPECT_TRUE(ControlPlane::CheckModelName("").ok());  // names no model: NOT_FOUND later
}

TEST_F(ControlPlaneTest, EveryModelAddressedCallChecksTheName) {
  InferenceServer& server = Start(ModelControlMode::kNone, false);
  const std::string bad = "../x";
  auto is_invalid = [](const Status& s) { return s.code() == StatusCode::kInvalidArgument; };
  EXPECT_TRUE(is_invalid(server.CheckModel(bad, -1)));
  EXPECT_TRUE(is_invalid(server.ModelReady(bad, -1).status()));
  EXPECT_TRUE(is_invalid(server.GetModelMetadata(bad, -1).status()));
  EXPECT_TRUE(is_invalid(server.GetModelConfigJson(bad, -1).status()));
  EXPECT_TRUE(is_invalid(server.GetModelSpec(bad, -1).status()));
  EXPECT_TRUE(is_invalid(server.GetStatistics(bad, -1).status()));
  EXPECT_TRUE(server.GetStatistics("", -1).ok());  // "" is every model there
  // A well-formed unknown name, and the empty one, are still NOT_FOUND.
  EXPECT_EQ(server.GetModelMetadata("nope", -1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(server.GetModelMetadata("", -1).status().code(), StatusCode::kNotFound);
  bool sync = false;
  Status load = Run([&](auto done) { server.control().Load("", bad, {}, done); }, &sync);
  EXPECT_TRUE(is_invalid(load));
  EXPECT_TRUE(sync);  // refused up front, never queued
  EXPECT_TRUE(is_invalid(Run([&](auto done) { server.control().Unload("", bad, {}, done); })));
}

TEST_F(ControlPlaneTest, LoadAndUnloadRunOnTheWorker) {
  InferenceServer& server = Start(ModelControlMode::kExplicit, false);
  EXPECT_EQ(server.ModelReady("simple", -1).status().code(), StatusCode::kNotFound);
  Parameters config = {{"config", std::string(R"({"backend":"add_sub","max_batch_size":8,
      "input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]},
               {"name":"INPUT1","data_type":"TYPE_INT32","dims":[16]}],
      "output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[16]},
                {"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[16]}]})")}};
  bool sync = true;
  Status s = Run([&](auto done) { server.control().Load("", "simple", config, done); }, &sync);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(*server.ModelReady("simple", -1));
  s = Run([&](auto done) {
    server.control().Unload("", "simple", {{"unload_dependents", true}}, done);
  });
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(*server.ModelReady("simple", -1));

  // After Stop (InferenceServer::Stop), calls are answered at once.
  server.Stop();
  s = Run([&](auto done) { server.control().Load("", "simple", {}, done); }, &sync);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "server is shutting down");
  EXPECT_TRUE(sync);
}

// With an unload delay the unload is answered when the model is unloaded,
// off the worker: a load meanwhile runs, and cancels the unload; Stop ends
// the delay rather than waiting for it.
TEST_F(ControlPlaneTest, ADelayedUnloadLeavesTheWorkerFree) {
  unload_delay_secs_ = 3600;
  InferenceServer& server = Start(ModelControlMode::kExplicit, false);
  ASSERT_TRUE(Run([&](auto done) { server.control().Load("", "simple", {}, done); }).ok());
  Answer unload;
  server.control().Unload("", "simple", {}, unload.Callback());
  // The load is queued behind the unload on the worker, and runs.
  Status load = Run([&](auto done) { server.control().Load("", "simple", {}, done); });
  ASSERT_TRUE(load.ok()) << load.message();
  auto [s, t] = unload.Get();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.message();
  EXPECT_TRUE(*server.ModelReady("simple", -1));

  Answer again;
  server.control().Unload("", "simple", {}, again.Callback());
  auto infer_ok = [&] { return server.CheckModel("simple", -1).ok(); };
  for (int i = 0; i < 30000 && *server.ModelReady("simple", -1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(*server.ModelReady("simple", -1)) << "UNLOADING";
  EXPECT_TRUE(infer_ok()) << "still serving";
  EXPECT_EQ(again.future.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  const auto start = std::chrono::steady_clock::now();
  server.Stop();
  auto [s2, t2] = again.Get();
  EXPECT_TRUE(s2.ok()) << s2.message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_FALSE(infer_ok());
}

TEST_F(ControlPlaneTest, RepositoryRules) {
  InferenceServer& server = Start(ModelControlMode::kExplicit, false);
  ControlPlane& control = server.control();
  auto load = [&](std::string_view repo, const Parameters& p) {
    return Run([&](auto done) { control.Load(repo, "simple", p, done); });
  };
  Status s = load("other", {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "'repository_name' specification is not supported");
  EXPECT_EQ(control.RepositoryIndex("other", false).status().code(), StatusCode::kUnimplemented);
  ASSERT_TRUE(control.RepositoryIndex("", false).ok());
  EXPECT_EQ(control.RepositoryIndex("", false)->size(), 1u);

  s = load("", {{"config", true}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "load parameter 'config' must be a string, got bool true");
  // Model files need a config, and are checked before anything is queued.
  bool sync = false;
  s = Run(
      [&](auto done) {
        control.Load("", "simple", {{"file:1/m", std::string("b")}}, done);
      },
      &sync);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Load parameter 'config' must be specified for model file override");
  EXPECT_TRUE(sync);
  s = load("", {{"config", std::string("{}")}, {"file:1/../m", std::string("b")}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid load parameter 'file:1/../m': '.' and '..' components are not allowed");
  s = load("", {{"config", std::string("{}")}, {"file:1/m", int64_t{1}}});
  EXPECT_EQ(s.message(), "load parameter 'file:1/m' must be the file's content, got int64 1");
  s = load("", {{"unload_dependents", true}});  // an unload parameter
  EXPECT_EQ(s.message(), "unrecognized load parameter 'unload_dependents'");
  s = Run([&](auto done) {
    control.Unload("", "simple", {{"unload_dependents", std::string("yes")}}, done);
  });
  EXPECT_EQ(s.message(), "unload parameter 'unload_dependents' must be a bool, got string 'yes'");
  // A config that does not parse: the model could not be read (Triton's
  // "failed to poll", INTERNAL), not a backend's failure to load it.
  s = load("", {{"config", std::string("{not json")}});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message().rfind("failed to load 'simple', failed to poll from model repository: ", 0),
            0u)
      << s.message();
}

TEST_F(ControlPlaneTest, LoadIsRefusedOutsideExplicitMode) {
  InferenceServer& server = Start(ModelControlMode::kNone, false);
  Status s = Run([&](auto done) { server.control().Load("", "simple", {}, done); });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("polling is enabled"), std::string::npos) << s.message();
}

TEST_F(ControlPlaneTest, ClientSharedMemoryIsGatedOnce) {
  InferenceServer& server = Start(ModelControlMode::kNone, /*allow_shm=*/false, /*gpus=*/1);
  ControlPlane& control = server.control();
  const std::string disabled =
      "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to "
      "enable.";
  for (const Status& s :
       {control.CheckClientShm(), control.RegisterSystemShm("r", "/k", 0, 8),
        control.UnregisterSystemShm("r"), control.UnregisterCudaShm(""),
        Run([&](auto done) { control.RegisterCudaShm("g", std::string(64, 'h'), 0, 8, done); })}) {
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
    EXPECT_EQ(s.message(), disabled);
  }
  // Status is not gated.
  EXPECT_TRUE(control.SystemShmStatus("").ok());
  EXPECT_TRUE(control.CudaShmStatus("").ok());
}

TEST_F(ControlPlaneTest, SharedMemoryRegistration) {
  InferenceServer& server = Start(ModelControlMode::kNone, /*allow_shm=*/true, /*gpus=*/1);
  ControlPlane& control = server.control();
  Status s = control.RegisterSystemShm("", "/k", 0, 8);
  EXPECT_EQ(s.message(), "'region name' is necessary to register system shared memory region");
  bool sync = false;
  s = Run([&](auto done) { control.RegisterCudaShm("", std::string(64, 'h'), 0, 8, done); }, &sync);
  EXPECT_EQ(s.message(), "'region name' is necessary to register CUDA shared memory region");
  EXPECT_TRUE(sync);
  for (int64_t device : {int64_t{-1}, int64_t{INT32_MAX} + 1}) {
    s = Run(
        [&](auto done) { control.RegisterCudaShm("g", std::string(64, 'h'), device, 8, done); });
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "'device_id' " + std::to_string(device) + " is out of range");
  }
  // Opened on the worker (the fake device maps host memory).
  Answer a;
  control.RegisterCudaShm("g", std::string(64, 'h'), 0, 8, a.Callback());
  auto [ok, thread] = a.Get();
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_NE(thread, std::this_thread::get_id());
  auto status = control.CudaShmStatus("g");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ((*status)[0].byte_size, 8u);
  // One namespace with system regions.
  s = Run([&](auto done) { control.RegisterCudaShm("g", std::string(64, 'h'), 0, 8, done); });
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  // Unregistering it as a system region is nothing to do: it stays.
  EXPECT_TRUE(control.UnregisterSystemShm("g").ok());
  EXPECT_TRUE(control.CudaShmStatus("g").ok());
  EXPECT_TRUE(control.UnregisterCudaShm("g").ok());
  EXPECT_EQ(control.CudaShmStatus("g").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(control.UnregisterCudaShm("g").ok());  // unknown: nothing to do (Triton)
}

TEST_F(ControlPlaneTest, CudaRegistrationWithoutAGpuSaysWhy) {
  InferenceServer& server = Start(ModelControlMode::kNone, /*allow_shm=*/true, /*gpus=*/0);
  Status s = Run(
      [&](auto done) { server.control().RegisterCudaShm("g", std::string(64, 'h'), 0, 8, done); });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);  // Triton's code
  EXPECT_NE(s.message().find("GPUs not supported (no CUDA device: fake)"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace inferd
