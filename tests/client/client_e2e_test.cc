// libinferclient against a real inferd process (loopback ports picked by the
// kernel, process stopped by the test): every Client operation over HTTP and
// gRPC, asynchronous inference, gRPC streaming, and the typed helpers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "inferd/client/client.h"
#include "inferd/client/grpc_client.h"
#include "inferd/client/http_client.h"
#include "inferd_process.h"

namespace inferd::client {
namespace {

using testing::InferdProcess;
using testing::TempRepository;

// One inferd for the whole binary's tests, started by the first test that
// asks for it and stopped by ServerEnvironment after the last one.
class Server {
 public:
  static Server& Get() {
    if (instance_ == nullptr) instance_ = new Server();
    return *instance_;
  }
  // Stops the server if a test started one: an unclean stop (a sanitizer
  // report at exit, a hang) is a test failure.
  static void StopIfStarted() {
    if (instance_ == nullptr) return;
    if (instance_->proc_) {
      const int code = instance_->proc_->Stop();  // non-zero on a sanitizer report too
      EXPECT_EQ(code, 0) << "inferd did not stop cleanly\n" << instance_->proc_->Log();
    }
    delete instance_;
    instance_ = nullptr;
  }
  std::string Url(const std::string& protocol) const {
    return "127.0.0.1:" +
           std::to_string(protocol == "grpc" ? proc_->grpc_port() : proc_->http_port());
  }
  const std::string& error() const { return error_; }
  bool ok() const { return proc_ != nullptr; }

 private:
  Server() {
    // simple (add_sub INT32 [16]), strings (identity BYTES, max_batch_size 8),
    // slow (delay backend, 300 ms, FP32 [-1]).
    repo_.CopyTestModels({"simple", "strings", "slow"});
    proc_ = std::make_unique<InferdProcess>(std::vector<std::string>{
        "--model-repository=" + repo_.path(), "--model-control-mode=explicit", "--load-model=*",
        "--http-address=127.0.0.1", "--http-port=0", "--grpc-address=127.0.0.1", "--grpc-port=0",
        "--allow-metrics=false", "--allow-client-shm=true"});
    if (!proc_->Start(&error_)) proc_.reset();
  }
  static inline Server* instance_ = nullptr;
  TempRepository repo_;
  std::unique_ptr<InferdProcess> proc_;
  std::string error_;
};

class ServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { Server::StopIfStarted(); }
};
const ::testing::Environment* const kServerEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServerEnvironment);

InferRequest SimpleRequest(int32_t k, const std::string& id = "") {
  std::vector<int32_t> a(16), b(16, k);
  for (int i = 0; i < 16; ++i) a[i] = i;
  InferRequest req;
  req.model = "simple";
  req.id = id;
  req.inputs = {MakeTensor("INPUT0", {1, 16}, a), MakeTensor("INPUT1", {1, 16}, b)};
  return req;
}

void ExpectSimple(const InferResult& r, int32_t k) {
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.model_name, "simple");
  const Tensor* sum = r.Output("OUTPUT0");
  const Tensor* diff = r.Output("OUTPUT1");
  ASSERT_NE(sum, nullptr);
  ASSERT_NE(diff, nullptr);
  EXPECT_EQ(sum->shape, (std::vector<int64_t>{1, 16}));
  auto s = sum->AsSpan<int32_t>();
  auto d = diff->ToVector<int32_t>();
  ASSERT_TRUE(s && d);
  ASSERT_EQ(s->size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ((*s)[i], i + k);
    EXPECT_EQ((*d)[i], i - k);
  }
  EXPECT_FALSE(sum->AsSpan<float>());  // wrong type: no view
}

class ClientTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Server::Get().ok()) << Server::Get().error();
    std::string error;
    client_ = MakeClient(GetParam(), Server::Get().Url(GetParam()), error);
    ASSERT_NE(client_, nullptr) << error;
  }
  std::unique_ptr<Client> client_;
};

TEST_P(ClientTest, HealthAndMetadata) {
  bool live = false, ready = false, model_ready = false;
  ASSERT_TRUE(client_->ServerLive(live).ok);
  ASSERT_TRUE(client_->ServerReady(ready).ok);
  ASSERT_TRUE(client_->ModelReady("simple", "", model_ready).ok);
  EXPECT_TRUE(live && ready && model_ready);
  ServerMetadata sm;
  std::string json;
  ASSERT_TRUE(client_->GetServerMetadata(sm, &json).ok);
  EXPECT_EQ(sm.name, "inferd");
  EXPECT_NE(std::find(sm.extensions.begin(), sm.extensions.end(), "statistics"),
            sm.extensions.end());
  EXPECT_NE(json.find("\"inferd\""), std::string::npos);
  ModelMetadata mm;
  ASSERT_TRUE(client_->GetModelMetadata("simple", "", mm).ok);
  EXPECT_EQ(mm.name, "simple");
  ASSERT_EQ(mm.inputs.size(), 2u);
  EXPECT_EQ(mm.inputs[0].name, "INPUT0");
  EXPECT_EQ(mm.inputs[0].datatype, "INT32");
  EXPECT_EQ(mm.inputs[0].shape, (std::vector<int64_t>{-1, 16}));
  ClientStatus st = client_->GetModelMetadata("no_such_model", "", mm);
  EXPECT_FALSE(st.ok);
  EXPECT_FALSE(st.unreachable);
  EXPECT_NE(st.message.find("no_such_model"), std::string::npos) << st.message;
}

TEST_P(ClientTest, ConfigAndStatistics) {
  std::string json;
  ASSERT_TRUE(client_->GetModelConfig("simple", "", json).ok);
  EXPECT_NE(json.find("\"add_sub\""), std::string::npos) << json;
  InferResult r;
  ASSERT_TRUE(client_->Infer(SimpleRequest(1), r).ok);
  ASSERT_TRUE(client_->GetModelStatistics("simple", "", json).ok);
  EXPECT_NE(json.find("\"inference_stats\""), std::string::npos) << json;
  ASSERT_TRUE(client_->GetModelStatistics("", "", json).ok);
  EXPECT_NE(json.find("\"strings\""), std::string::npos) << json;
}

TEST_P(ClientTest, InferTypedAndBytes) {
  InferResult r;
  ASSERT_TRUE(client_->Infer(SimpleRequest(3, "req-1"), r).ok);
  ExpectSimple(r, 3);
  EXPECT_EQ(r.id, "req-1");

  InferRequest req;
  req.model = "strings";
  req.inputs = {MakeBytesTensor("INPUT0", {1, 3}, {"a", "", std::string("z\0y", 3)})};
  ASSERT_TRUE(client_->Infer(req, r).ok);
  ASSERT_TRUE(r.ok()) << r.error;
  auto strings = r.outputs.at(0).ToStrings();
  ASSERT_TRUE(strings);
  EXPECT_EQ(*strings, (std::vector<std::string>{"a", "", std::string("z\0y", 3)}));

  // Only the requested output comes back.
  req = SimpleRequest(2);
  req.outputs.push_back({"OUTPUT1"});
  ASSERT_TRUE(client_->Infer(req, r).ok);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].name, "OUTPUT1");
}

TEST_P(ClientTest, ServerErrorsComeBackInTheResult) {
  InferRequest req = SimpleRequest(1);
  req.inputs[1].shape = {1, 8};
  req.inputs[1].data.resize(32);
  InferResult r;
  ClientStatus st = client_->Infer(req, r);
  ASSERT_TRUE(st.ok) << st.message;
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("INPUT1"), std::string::npos) << r.error;
  // And the connection still serves.
  ASSERT_TRUE(client_->Infer(SimpleRequest(4), r).ok);
  ExpectSimple(r, 4);
}

TEST_P(ClientTest, AsyncInferCompletesEveryRequest) {
  constexpr int kN = 16;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<int> seen(kN, 0);
  for (int i = 0; i < kN; ++i) {
    client_->AsyncInfer(SimpleRequest(i, std::to_string(i)),
                        [&, i](ClientStatus st, InferResult r) {
                          EXPECT_TRUE(st.ok) << st.message;
                          ExpectSimple(r, i);
                          std::lock_guard<std::mutex> lock(mu);
                          seen[i] = r.id == std::to_string(i);
                          ++done;
                          cv.notify_all();
                        });
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done == kN; }));
  EXPECT_EQ(seen, std::vector<int>(kN, 1));
}

TEST_P(ClientTest, RepositoryLoadAndUnload) {
  ASSERT_TRUE(client_->UnloadModel("strings").ok);
  std::vector<RepositoryEntry> index;
  ASSERT_TRUE(client_->RepositoryIndex(index).ok);
  auto state = [&](const std::string& name) {
    for (const auto& e : index)
      if (e.name == name) return e.state;
    return std::string("missing");
  };
  EXPECT_EQ(state("strings"), "UNAVAILABLE");
  EXPECT_EQ(state("simple"), "READY");
  ASSERT_TRUE(client_->LoadModel("strings").ok);
  ASSERT_TRUE(client_->RepositoryIndex(index).ok);
  EXPECT_EQ(state("strings"), "READY");
  ClientStatus st = client_->LoadModel("no_such_model");
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("no_such_model"), std::string::npos) << st.message;
}

TEST_P(ClientTest, SystemSharedMemoryInputsAndOutputs) {
  // One region: INPUT0, INPUT1, then room for both outputs.
  const std::string name = "client-e2e-" + GetParam();
  const std::string key = "/" + name + "-" + std::to_string(getpid());
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 256), 0);
  auto* mem = static_cast<int32_t*>(mmap(nullptr, 256, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(mem, MAP_FAILED);
  for (int i = 0; i < 16; ++i) {
    mem[i] = i;
    mem[16 + i] = 5;
  }
  ClientStatus reg = client_->RegisterSystemSharedMemory(name, key, 0, 256);
  ASSERT_TRUE(reg.ok) << reg.message;
  InferRequest req = SimpleRequest(0);
  for (size_t i = 0; i < 2; ++i) {
    req.inputs[i].data.clear();
    req.inputs[i].shm_region = name;
    req.inputs[i].shm_offset = 64 * i;
    req.inputs[i].shm_byte_size = 64;
  }
  for (size_t i = 0; i < 2; ++i) {
    RequestedOutput o("OUTPUT" + std::to_string(i));
    o.shm_region = name;
    o.shm_offset = 128 + 64 * i;
    o.shm_byte_size = 64;
    req.outputs.push_back(o);
  }
  InferResult r;
  ClientStatus st = client_->Infer(req, r);
  EXPECT_TRUE(st.ok) << st.message;
  EXPECT_TRUE(r.ok()) << r.error;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(mem[32 + i], i + 5);
    EXPECT_EQ(mem[48 + i], i - 5);
  }
  EXPECT_TRUE(client_->UnregisterSystemSharedMemory(name).ok);
  st = client_->Infer(req, r);  // the region is gone: the server says so
  EXPECT_TRUE(st.ok) << st.message;
  EXPECT_NE(r.error.find(name), std::string::npos) << r.error;
  munmap(mem, 256);
  shm_unlink(key.c_str());
}

TEST_P(ClientTest, UnreachableServer) {
  std::string error;
  auto c = MakeClient(GetParam(), "127.0.0.1:1", error);
  ASSERT_NE(c, nullptr);
  bool live = true;
  ClientStatus st = c->ServerLive(live);
  EXPECT_FALSE(st.ok);
  EXPECT_TRUE(st.unreachable) << st.message;
  EXPECT_FALSE(live);
  InferResult r;
  st = c->Infer(SimpleRequest(1), r);
  EXPECT_TRUE(st.unreachable) << st.message;
}

INSTANTIATE_TEST_SUITE_P(Protocols, ClientTest, ::testing::Values("http", "grpc"),
                         [](const auto& info) { return info.param; });

// ---- gRPC only ----------------------------------------------------------------

TEST(GrpcClientTest, StreamDeliversResponsesInOrderAndSurvivesErrors) {
  ASSERT_TRUE(Server::Get().ok()) << Server::Get().error();
  GrpcClient client(Server::Get().Url("grpc"));
  std::mutex mu;
  std::condition_variable cv;
  std::vector<InferResult> results;
  auto stream = client.StartStream([&](ClientStatus st, InferResult r) {
    EXPECT_TRUE(st.ok) << st.message;
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
    cv.notify_all();
  });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(stream->Send(SimpleRequest(i, std::to_string(i))).ok);
  InferRequest bad = SimpleRequest(0, "bad");
  bad.model = "no_such_model";
  ASSERT_TRUE(stream->Send(bad).ok);
  ASSERT_TRUE(stream->Send(SimpleRequest(7, "7")).ok);
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return results.size() == 7; }));
  }
  ClientStatus st = stream->Close();
  EXPECT_TRUE(st.ok) << st.message;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(results[i].id, std::to_string(i));
    ExpectSimple(results[i], i);
  }
  EXPECT_FALSE(results[5].ok());
  EXPECT_NE(results[5].error.find("no_such_model"), std::string::npos) << results[5].error;
  ExpectSimple(results[6], 7);
  EXPECT_FALSE(stream->Send(SimpleRequest(1)).ok);  // closed
}

TEST(GrpcClientTest, OneClientServesManyThreadsAtOnce) {
  ASSERT_TRUE(Server::Get().ok()) << Server::Get().error();
  GrpcClient client(Server::Get().Url("grpc"));
  // Four threads each wait on `slow` (300 ms) and then call `simple` over the
  // one shared channel.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      InferRequest req;
      req.model = "slow";
      req.inputs = {MakeTensor<float>("INPUT0", {2}, {1.5f, -2.0f})};
      InferResult r;
      if (client.Infer(req, r).ok && r.ok() && r.outputs.size() == 1 &&
          r.outputs[0].ToVector<float>() == std::vector<float>{1.5f, -2.0f})
        ++ok;
      for (int i = 0; i < 10; ++i)
        if (client.Infer(SimpleRequest(i), r).ok && r.ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 44);
}

// ---- typed helpers (no server) ------------------------------------------------

TEST(TensorTest, TypedHelpersAndJson) {
  Tensor t = MakeTensor<float>("x", {2, 2}, {1.f, 2.5f, -3.f, 4.f});
  EXPECT_EQ(t.datatype, "FP32");
  EXPECT_EQ(t.ElementCount(), 4);
  EXPECT_EQ(DataToJson(t), "[1.0,2.5,-3.0,4.0]");
  EXPECT_EQ(DataToJson(MakeTensor<float>("f", {3}, {0.1f, 1e-7f, -2.0f / 3})),
            "[0.1,1e-07,-0.6666667]");
  EXPECT_FALSE(t.ToVector<int32_t>());

  Tensor u;
  u.name = "u";
  u.datatype = "INT64";
  u.shape = {3};
  ASSERT_TRUE(SetDataFromJson(u, "[[1],[2,3]]").ok);
  EXPECT_EQ(u.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  ClientStatus st = SetDataFromJson(u, "[1,2]");
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("2 values for a shape of 3 elements"), std::string::npos);
  st = SetDataFromJson(u, "[1.5,2,3]");
  EXPECT_FALSE(st.ok);
  EXPECT_NE(st.message.find("not a INT64"), std::string::npos) << st.message;

  Tensor h;
  h.datatype = "FP16";
  h.shape = {3};
  ASSERT_TRUE(SetDataFromJson(h, "[1, -0.5, 65504]").ok);
  EXPECT_EQ(h.data.size(), 6u);
  EXPECT_EQ(DataToJson(h), "[1.0,-0.5,65504.0]");

  Tensor s = MakeBytesTensor("s", {2}, {"ab", "c"});
  EXPECT_EQ(s.data, std::string("\x02\0\0\0ab\x01\0\0\0c", 11));
  EXPECT_EQ(DataToJson(s), R"(["ab","c"])");
  s.data.pop_back();
  EXPECT_FALSE(s.ToStrings());  // truncated element
}

}  // namespace
}  // namespace inferd::client
