// Backend ABI version 2, the server's side: v1 and v2 tables load, other
// versions are refused; request metadata; response factories through the
// batch runner (decoupled and not); calls into the server against a fake
// InferenceCaller; model_set_unavailable up to the model manager.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "backend/inference_caller.h"
#include "backend/plugin_backend.h"
#include "model_manager_fixture.h"
#include "scheduler/batch_runner.h"

namespace inferd {
namespace {

// ---- a scripted in-process plugin -----------------------------------------------

const InferdHostApi* host = nullptr;
InferdHostModel* last_host_model = nullptr;
int32_t last_decoupled = -1;
std::function<void(InferdRequest* const*, uint32_t)> on_execute;

InferdError* Init(const InferdHostApi* h, void** state) {
  host = h;
  *state = nullptr;
  return nullptr;
}
void Fini(void*) {}
InferdError* ModelInit(void*, const InferdModelInfo* info, void** state) {
  last_host_model = info->host_model;
  last_decoupled = info->decoupled;
  *state = nullptr;
  return nullptr;
}
void ModelFini(void*) {}
InferdError* InstInit(void*, const InferdInstanceInfo*, void** state) {
  *state = nullptr;
  return nullptr;
}
void InstFini(void*) {}
InferdError* Execute(void*, InferdRequest* const* requests, uint32_t n) {
  if (on_execute) on_execute(requests, n);
  return nullptr;
}

InferdBackendApi table = {
    INFERD_BACKEND_ABI_VERSION, Init, Fini, ModelInit, ModelFini, InstInit, InstFini, Execute, 0};
const InferdBackendApi* Entry(uint32_t) { return &table; }

std::string Take(InferdError* e) {
  if (e == nullptr) return "";
  std::string m = std::to_string(host->error_code(e)) + ": " + host->error_message(e);
  host->error_delete(e);
  return m;
}

TensorSpec Tensor(const std::string& name, DataType type, Shape dims) {
  TensorSpec t;
  t.name = name;
  t.datatype = type;
  t.dims = std::move(dims);
  return t;
}

ModelSpec Spec(bool decoupled) {
  ModelSpec s;
  s.name = "m";
  s.decoupled = decoupled;
  s.outputs.push_back(Tensor("OUT", DataType::kInt32, {1}));
  s.outputs.push_back(Tensor("IDX", DataType::kUint32, {1}));
  return s;
}

struct Loaded {
  ModelSpec spec;
  ModelStats stats;  // outlives the streams, as a ModelVersion's does
  std::shared_ptr<ModelHealth> health = std::make_shared<ModelHealth>();
  std::unique_ptr<BackendModel> model;
  std::unique_ptr<BackendInstance> instance;
};

std::unique_ptr<Loaded> Load(bool decoupled, uint32_t abi = INFERD_BACKEND_ABI_VERSION) {
  table.abi_version = abi;
  auto out = std::make_unique<Loaded>();
  out->spec = Spec(decoupled);
  auto backend = MakePluginBackend("scripted", Entry, "test");
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  if (!backend.ok()) return nullptr;
  ModelLoadContext ctx;
  ctx.spec = &out->spec;
  ctx.health = out->health;
  auto model = (*backend)->LoadModel(ctx);
  EXPECT_TRUE(model.ok());
  out->model = std::move(*model);
  out->instance = std::move(*out->model->CreateInstance(InstanceInfo{}));
  return out;
}

class PluginV2Test : public ::testing::Test {
 protected:
  void TearDown() override {
    on_execute = nullptr;
    table.abi_version = INFERD_BACKEND_ABI_VERSION;
  }
};

TEST_F(PluginV2Test, TablesOfVersionOneToThreeLoadOthersAreRefused) {
  for (uint32_t v : {1u, 2u, 3u}) {
    table.abi_version = v;
    EXPECT_TRUE(MakePluginBackend("scripted", Entry, "test").ok()) << v;
  }
  for (uint32_t v : {0u, 4u}) {
    table.abi_version = v;
    auto b = MakePluginBackend("scripted", Entry, "test");
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("built for backend ABI version " + std::to_string(v)),
              std::string::npos)
        << b.status().message();
    EXPECT_NE(b.status().message().find("versions 1 to 3"), std::string::npos);
  }
}

TEST_F(PluginV2Test, ALibraryBuiltForVersionOneServes) {
  auto backend =
      LoadPluginLibrary("abi_v1", std::string(INFERD_TEST_BACKEND_DIR) + "/libinferd_abi_v1.so");
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  ModelSpec spec;
  spec.name = "v1";
  spec.inputs.push_back(Tensor("INPUT0", DataType::kInt32, {-1}));
  spec.outputs.push_back(Tensor("OUTPUT0", DataType::kInt32, {-1}));
  ModelLoadContext ctx;
  ctx.spec = &spec;
  auto model = (*backend)->LoadModel(ctx);
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto instance = (*model)->CreateInstance(InstanceInfo{});
  ASSERT_TRUE(instance.ok());
  InferRequest request;
  const int32_t data[3] = {4, 5, 6};
  request.inputs.push_back(InferInput{
      "INPUT0", DataType::kInt32, {3}, BufferView{reinterpret_cast<const char*>(data), 12}});
  InferResponse response;
  ExecutionItem item{&request, &response, Status::Ok()};
  (*instance)->Execute(std::span<ExecutionItem>(&item, 1));
  ASSERT_TRUE(item.status.ok()) << item.status.message();
  ASSERT_EQ(response.outputs.size(), 1u);
  EXPECT_EQ(std::memcmp(response.outputs[0].buffer.data(), data, 12), 0);
}

TEST_F(PluginV2Test, ModelInfoCarriesDecoupledAndTheHostModel) {
  auto m = Load(true);
  EXPECT_EQ(last_decoupled, 1);
  ASSERT_NE(last_host_model, nullptr);
  host->model_set_unavailable(last_host_model, "worker process died");
  EXPECT_TRUE(m->health->failed());
  EXPECT_EQ(m->health->reason(), "worker process died");
  host->model_set_unavailable(last_host_model, "second reason");
  EXPECT_EQ(m->health->reason(), "worker process died") << "the first reason stays";
  Load(false);
  EXPECT_EQ(last_decoupled, 0);
}

TEST_F(PluginV2Test, RequestMetadata) {
  auto m = Load(false);
  InferRequest request;
  request.id = "r";
  request.correlation_id = std::string("seq-7");
  request.sequence_start = true;
  request.timeout_us = 1500;
  request.parameters["temperature"] = 0.5;
  request.parameters["mode"] = std::string("fast \"x\"");
  request.parameters["n"] = int64_t{3};
  request.parameters["on"] = true;
  request.cancel_flag = std::make_shared<std::atomic<bool>>(false);
  InferResponse response;
  ExecutionItem item{&request, &response, Status::Ok()};
  std::vector<std::string> seen;
  on_execute = [&](InferdRequest* const* r, uint32_t) {
    const char* sid = nullptr;
    EXPECT_EQ(host->request_correlation_id(r[0], nullptr, &sid), INFERD_CORRELATION_STRING);
    seen.push_back(sid);
    EXPECT_EQ(host->request_flags(r[0]), static_cast<uint32_t>(INFERD_REQUEST_SEQUENCE_START));
    EXPECT_EQ(host->request_timeout_us(r[0]), 1500u);
    seen.push_back(host->request_parameters_json(r[0]));
    for (uint32_t i = 0; i < host->request_output_name_count(r[0]); ++i) {
      seen.push_back(host->request_output_name(r[0], i));
    }
    EXPECT_EQ(host->request_is_cancelled(r[0]), 0);
    request.cancel_flag->store(true);
    EXPECT_EQ(host->request_is_cancelled(r[0]), 1);
  };
  m->instance->Execute(std::span<ExecutionItem>(&item, 1));
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "seq-7", R"({"mode":"fast \"x\"","n":3,"on":true,"temperature":0.5})", "OUT",
                      "IDX"}));
}

// A sink that keeps what it gets.
struct Got {
  std::vector<std::unique_ptr<InferResponse>> responses;
  std::vector<bool> finals;
  std::vector<Status> finishes;
};
class GotSink : public InferResponseSink {
 public:
  explicit GotSink(Got* g) : g_(g) {}
  void Send(std::unique_ptr<InferResponse> r, bool final) override {
    g_->responses.push_back(std::move(r));
    g_->finals.push_back(final);
  }
  void Finish(Status s) override { g_->finishes.push_back(std::move(s)); }

 private:
  Got* g_;
};

void RunOne(Loaded& m, Got& got) {
  BatchContext ctx{ModelIdentity{"m", 1, &m.spec}, &m.stats, RealClock::Get()};
  std::vector<std::unique_ptr<PendingRequest>> batch;
  batch.push_back(std::make_unique<PendingRequest>());
  batch[0]->request = std::make_unique<InferRequest>();
  batch[0]->request->id = "q";
  batch[0]->sink = std::make_unique<GotSink>(&got);
  RunBatch(ctx, *m.instance, batch);
}

InferdResponse* NewResponse(InferdResponseFactory* f, int32_t value, std::string* err = nullptr) {
  InferdResponse* r = nullptr;
  EXPECT_EQ(Take(host->response_new(f, &r)), "");
  const int64_t shape[1] = {1};
  void* buf = nullptr;
  EXPECT_EQ(Take(host->response_output_alloc(r, "OUT", INFERD_TYPE_INT32, shape, 1, 4, nullptr,
                                             nullptr, &buf)),
            "");
  std::memcpy(buf, &value, 4);
  const std::string e = Take(host->response_output_alloc(r, "NOPE", INFERD_TYPE_INT32, shape, 1, 4,
                                                         nullptr, nullptr, &buf));
  if (err) *err = e;
  return r;
}

TEST_F(PluginV2Test, DecoupledFactorySendsResponsesThenFinalFromAnotherThread) {
  auto m = Load(true);
  Got got;
  InferdResponseFactory* factory = nullptr;
  std::string alloc_error;
  on_execute = [&](InferdRequest* const* r, uint32_t) {
    ASSERT_EQ(Take(host->response_factory_new(r[0], &factory)), "");
    InferdResponseFactory* second = nullptr;
    EXPECT_EQ(Take(host->response_factory_new(r[0], &second)).substr(0, 3), "9: ");
  };
  RunOne(*m, got);
  ASSERT_NE(factory, nullptr);
  EXPECT_TRUE(got.responses.empty() && got.finishes.empty());
  std::thread worker([&] {
    for (int32_t i = 0; i < 3; ++i) {
      InferdResponse* r = NewResponse(factory, 10 + i, &alloc_error);
      const int32_t yes = 1;
      EXPECT_EQ(Take(host->response_set_parameter(r, "last", INFERD_PARAMETER_BOOL, &yes)), "");
      EXPECT_STREQ(host->response_parameters_json(r), R"({"last":true})");
      EXPECT_EQ(Take(host->response_send(factory, r, 0, nullptr)), "");
    }
    EXPECT_EQ(Take(host->response_send(factory, nullptr, 0, nullptr)).substr(0, 3), "3: ");
    EXPECT_EQ(Take(host->response_send(factory, nullptr, 4, nullptr)).substr(0, 3), "3: ");
    EXPECT_EQ(host->response_factory_is_cancelled(factory), 0);
    EXPECT_EQ(Take(host->response_send(factory, nullptr, INFERD_RESPONSE_FINAL, nullptr)), "");
    EXPECT_EQ(Take(host->response_send(factory, NewResponse(factory, 1), 0, nullptr)).substr(0, 3),
              "9: ");
    host->response_factory_delete(factory);
  });
  worker.join();
  EXPECT_NE(alloc_error.find("'NOPE' is not an output of the model"), std::string::npos)
      << alloc_error;
  ASSERT_EQ(got.responses.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(got.finals[i]);
    EXPECT_EQ(got.responses[i]->id, "q");
    int32_t v = 0;
    std::memcpy(&v, got.responses[i]->outputs.at(0).buffer.data(), 4);
    EXPECT_EQ(v, 10 + i);
  }
  ASSERT_EQ(got.finishes.size(), 1u);
  EXPECT_TRUE(got.finishes[0].ok());
}

TEST_F(PluginV2Test, AnErrorSentOrAFactoryDeletedEarlyFinishesTheRequest) {
  auto m = Load(true);
  Got got;
  on_execute = [&](InferdRequest* const* r, uint32_t) {
    InferdResponseFactory* f = nullptr;
    ASSERT_EQ(Take(host->response_factory_new(r[0], &f)), "");
    EXPECT_EQ(Take(host->response_send(f, NewResponse(f, 1), 0,
                                       host->error_new(INFERD_ERROR_UNAVAILABLE, "stub died"))),
              "");
    host->response_factory_delete(f);
  };
  RunOne(*m, got);
  EXPECT_TRUE(got.responses.empty());
  ASSERT_EQ(got.finishes.size(), 1u);
  EXPECT_EQ(got.finishes[0].code(), StatusCode::kUnavailable);
  EXPECT_EQ(got.finishes[0].message(), "stub died");

  Got early;
  on_execute = [&](InferdRequest* const* r, uint32_t) {
    InferdResponseFactory* f = nullptr;
    ASSERT_EQ(Take(host->response_factory_new(r[0], &f)), "");
    host->response_factory_delete(f);
  };
  RunOne(*m, early);
  ASSERT_EQ(early.finishes.size(), 1u);
  EXPECT_EQ(early.finishes[0].message(), "backend released the request without a final response");
}

TEST_F(PluginV2Test, ANonDecoupledModelMayAnswerOnceThroughAFactory) {
  auto m = Load(false);
  Got got;
  on_execute = [&](InferdRequest* const* r, uint32_t) {
    InferdResponseFactory* f = nullptr;
    ASSERT_EQ(Take(host->response_factory_new(r[0], &f)), "");
    EXPECT_EQ(Take(host->response_send(f, NewResponse(f, 5), 0, nullptr)), "");
    EXPECT_EQ(Take(host->response_send(f, NewResponse(f, 6), 0, nullptr)).substr(0, 3), "9: ");
    EXPECT_EQ(Take(host->response_send(f, nullptr, INFERD_RESPONSE_FINAL, nullptr)), "");
    host->response_factory_delete(f);
  };
  RunOne(*m, got);
  ASSERT_EQ(got.responses.size(), 1u);
  EXPECT_TRUE(got.finals[0]);
  EXPECT_TRUE(got.finishes.empty());
}

// ---- calls into the server -------------------------------------------------------

class FakeCaller : public InferenceCaller {
 public:
  void Submit(std::unique_ptr<InferRequest> request,
              std::unique_ptr<InferResponseSink> sink) override {
    requests.push_back(std::move(request));
    sinks.push_back(std::move(sink));
  }
  std::vector<std::unique_ptr<InferRequest>> requests;
  std::vector<std::unique_ptr<InferResponseSink>> sinks;
};

struct Callbacks {
  std::vector<std::string> log;
};

void Callback(void* user, InferdResponse* response, InferdError* error, uint32_t flags) {
  auto* c = static_cast<Callbacks*>(user);
  std::string entry = (flags & INFERD_RESPONSE_FINAL) ? "final" : "more";
  if (response != nullptr) {
    InferdTensor t{};
    EXPECT_EQ(host->response_output_count(response), 1u);
    EXPECT_EQ(Take(host->response_output(response, 0, &t)), "");
    int32_t v = 0;
    std::memcpy(&v, t.buffer, 4);
    entry += " " + std::string(t.name) + "=" + std::to_string(v) + " " +
             host->response_parameters_json(response);
    host->response_delete(response);
  }
  if (error != nullptr) entry += " error " + Take(error);
  c->log.push_back(entry);
}

TEST_F(PluginV2Test, InferCallsGoThroughTheInjectedCaller) {
  Load(false);  // sets `host`
  FakeCaller caller;
  SetInferenceCaller(&caller);
  InferdInferCall* call = nullptr;
  ASSERT_EQ(Take(host->infer_new("callee", -1, &call)), "");
  EXPECT_EQ(Take(host->infer_set_id(call, "bls-1")), "");
  EXPECT_EQ(Take(host->infer_set_correlation_id(call, INFERD_CORRELATION_UINT, 42, nullptr)), "");
  EXPECT_EQ(Take(host->infer_set_flags(call, INFERD_REQUEST_SEQUENCE_END)), "");
  EXPECT_EQ(Take(host->infer_set_flags(call, 8)).substr(0, 3), "3: ");
  EXPECT_EQ(Take(host->infer_set_timeout_us(call, 99)), "");
  const int64_t k = 5;
  EXPECT_EQ(Take(host->infer_set_parameter(call, "k", INFERD_PARAMETER_INT, &k)), "");
  EXPECT_EQ(Take(host->infer_set_parameter(call, "s", INFERD_PARAMETER_STRING, "v")), "");
  int32_t data[2] = {1, 2};
  const int64_t shape[1] = {2};
  EXPECT_EQ(Take(host->infer_add_input(call, "IN", INFERD_TYPE_INT32, shape, 1, data, 8)), "");
  EXPECT_EQ(
      Take(host->infer_add_input(call, "IN", INFERD_TYPE_INT32, shape, 1, data, 8)).substr(0, 3),
      "3: ");
  data[0] = 100;  // the input was copied
  EXPECT_EQ(Take(host->infer_add_requested_output(call, "OUT")), "");
  Callbacks cb;
  EXPECT_EQ(Take(host->infer_start(call, Callback, &cb)), "");
  ASSERT_EQ(caller.requests.size(), 1u);
  const InferRequest& q = *caller.requests[0];
  EXPECT_EQ(q.model_name, "callee");
  EXPECT_EQ(q.model_version, -1);
  EXPECT_EQ(q.id, "bls-1");
  EXPECT_EQ(std::get<uint64_t>(q.correlation_id), 42u);
  EXPECT_TRUE(q.sequence_end);
  EXPECT_FALSE(q.sequence_start);
  EXPECT_EQ(q.timeout_us, 99u);
  EXPECT_EQ(std::get<int64_t>(q.parameters.at("k")), 5);
  EXPECT_EQ(std::get<std::string>(q.parameters.at("s")), "v");
  ASSERT_EQ(q.inputs.size(), 1u);
  int32_t first = 0;
  std::memcpy(&first, q.inputs[0].data.data, 4);
  EXPECT_EQ(first, 1);
  ASSERT_EQ(q.outputs.size(), 1u);

  // A decoupled callee: responses as they come, then FINAL alone.
  auto response = [](int32_t v) {
    auto r = std::make_unique<InferResponse>();
    std::memcpy(r->AddOutput("OUT", DataType::kInt32, {1}, 4).buffer.data(), &v, 4);
    r->parameters["p"] = int64_t{1};
    return r;
  };
  caller.sinks[0]->Send(response(7), false);
  caller.sinks[0]->Send(response(8), false);
  caller.sinks[0]->Finish(Status::Ok());
  EXPECT_EQ(cb.log,
            (std::vector<std::string>{"more OUT=7 {\"p\":1}", "more OUT=8 {\"p\":1}", "final"}));

  // A failed call: one callback with the error and FINAL.
  Callbacks failed;
  ASSERT_EQ(Take(host->infer_new("callee", 2, &call)), "");
  EXPECT_EQ(Take(host->infer_start(call, Callback, &failed)), "");
  caller.sinks[1]->Finish(NotFound("no model 'callee'"));
  EXPECT_EQ(failed.log, std::vector<std::string>{"final error 5: no model 'callee'"});

  // A call dropped by the server without a final signal still ends.
  Callbacks dropped;
  ASSERT_EQ(Take(host->infer_new("callee", 2, &call)), "");
  EXPECT_EQ(Take(host->infer_start(call, Callback, &dropped)), "");
  caller.sinks[2].reset();
  ASSERT_EQ(dropped.log.size(), 1u);
  EXPECT_NE(dropped.log[0].find("final error 13"), std::string::npos);

  ASSERT_EQ(Take(host->infer_new("callee", 2, &call)), "");
  host->infer_delete(call);
  ClearInferenceCaller(&caller);
  ASSERT_EQ(Take(host->infer_new("callee", 2, &call)), "");
  EXPECT_EQ(Take(host->infer_start(call, Callback, &dropped)).substr(0, 4), "14: ");
}

// ---- model_set_unavailable up to the manager -----------------------------------------

class UnavailableTest : public testing::ModelManagerFixture {};

TEST_F(UnavailableTest, AMarkedVersionIsUnavailableWithTheReasonUntilReloaded) {
  ASSERT_TRUE(registry_->RegisterBuiltin("scripted", Entry).ok());
  const std::string config =
      "name: \"s\"\nbackend: \"scripted\"\nmax_batch_size: 0\n"
      "input [{ name: \"IN\" data_type: TYPE_INT32 dims: [1] }]\n"
      "output [{ name: \"OUT\" data_type: TYPE_INT32 dims: [1] }]\n";
  source_->SetModel("s", config, {1});
  ModelManager& manager = NewManager(ModelControlMode::kExplicit);
  ASSERT_TRUE(manager.Load("s", std::nullopt).ok());
  ASSERT_TRUE(manager.Get("s", -1).ok());
  InferdHostModel* first = last_host_model;
  host->model_set_unavailable(first, "stub process exited with signal 9");
  auto got = manager.Get("s", -1);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("stub process exited with signal 9"), std::string::npos)
      << got.status().message();
  EXPECT_EQ(manager.Get("s", 1).status().code(), StatusCode::kUnavailable);
  auto entries = Entries("s");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].state, ModelState::kUnavailable);
  EXPECT_EQ(entries[0].reason, "stub process exited with signal 9");
  EXPECT_FALSE(manager.IsReady("s", -1));
  EXPECT_FALSE(manager.AllReady());

  ASSERT_TRUE(manager.Load("s", std::nullopt).ok());  // a reload replaces the version
  ASSERT_TRUE(manager.Get("s", -1).ok());
  EXPECT_NE(last_host_model, first);
  EXPECT_EQ(Entries("s").at(0).state, ModelState::kReady);
  EXPECT_TRUE(manager.AllReady());
}

}  // namespace
}  // namespace inferd
