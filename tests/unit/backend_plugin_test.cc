// The backend ABI adapter: table checks, lifecycle, per-request errors,
// output allocation checks, exceptions that escape a plugin, and loading
// shared libraries (the identity example, a plugin built for another ABI
// version).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend_registry.h"
#include "backend/plugin_backend.h"

namespace inferd {
namespace {

// ---- a configurable in-process plugin ---------------------------------------

struct Script {
  bool fail_initialize = false;
  bool fail_model = false;
  bool throw_in_execute = false;
  bool execute_returns_error = false;
  // What execute does to request i (by its id): "ok", "fail", "bad-name",
  // "bad-type", "bad-size", "twice".
  std::vector<std::string> log;
  uint32_t cpu_threads = 99;  // request_cpu_threads of the last batch's first request
};
Script script;
const InferdHostApi* host = nullptr;

InferdError* Init(const InferdHostApi* h, void** state) {
  host = h;
  script.log.push_back("initialize");
  *state = &script;
  if (script.fail_initialize) return h->error_new(INFERD_ERROR_INTERNAL, "boom");
  return nullptr;
}
void Fini(void*) { script.log.push_back("finalize"); }
InferdError* ModelInit(void*, const InferdModelInfo* info, void** state) {
  script.log.push_back(std::string("model_initialize ") + info->name);
  if (script.fail_model) {
    return host->error_new(INFERD_ERROR_INVALID_ARGUMENT, "model file is broken");
  }
  *state = const_cast<InferdModelInfo*>(info);
  return nullptr;
}
void ModelFini(void*) { script.log.push_back("model_finalize"); }
InferdError* InstInit(void* model, const InferdInstanceInfo* info, void** state) {
  script.log.push_back(std::string("instance_initialize ") + info->name);
  *state = model;
  return nullptr;
}
void InstFini(void*) { script.log.push_back("instance_finalize"); }

void Output(InferdRequest* r, const char* name, InferdDataType t, int64_t n, uint64_t bytes) {
  InferdMemoryType mt = INFERD_MEMORY_GPU;
  int64_t dev = 3;
  void* buf = nullptr;
  InferdError* e = host->request_output_alloc(r, name, t, &n, 1, bytes, &mt, &dev, &buf);
  if (e != nullptr) {
    host->request_set_error(r, e);
    return;
  }
  EXPECT_EQ(mt, INFERD_MEMORY_CPU);
  EXPECT_EQ(dev, 0);
  std::memset(buf, 7, bytes);
}

InferdError* Exec(void*, InferdRequest* const* requests, uint32_t n) {
  if (script.throw_in_execute) throw std::runtime_error("escaped");
  if (n > 0) script.cpu_threads = host->request_cpu_threads(requests[0]);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string what = host->request_id(requests[i]);
    InferdTensor in{};
    InferdError* e = host->request_input_by_name(requests[i], "IN", &in);
    EXPECT_EQ(e, nullptr);
    if (e) host->error_delete(e);
    if (what == "fail") {
      host->request_set_error(requests[i], host->error_new(INFERD_ERROR_INVALID_ARGUMENT, "no"));
    } else if (what == "bad-name") {
      Output(requests[i], "NOPE", INFERD_TYPE_FP32, 1, 4);
    } else if (what == "bad-type") {
      Output(requests[i], "OUT", INFERD_TYPE_INT32, 1, 4);
    } else if (what == "bad-size") {
      Output(requests[i], "OUT", INFERD_TYPE_FP32, 2, 4);
    } else if (what == "twice") {
      Output(requests[i], "OUT", INFERD_TYPE_FP32, 1, 4);
      Output(requests[i], "OUT", INFERD_TYPE_FP32, 1, 4);
    } else if (what != "skip") {
      Output(requests[i], "OUT", INFERD_TYPE_FP32, 1, 4);
    }
  }
  if (script.execute_returns_error) return host->error_new(INFERD_ERROR_UNAVAILABLE, "batch");
  return nullptr;
}

InferdBackendApi table = {
    INFERD_BACKEND_ABI_VERSION, Init, Fini, ModelInit, ModelFini, InstInit, InstFini, Exec, 0};
const InferdBackendApi* TestEntry(uint32_t) { return &table; }
const InferdBackendApi* NullEntry(uint32_t) { return nullptr; }

TensorSpec Tensor(const char* name, DataType type) {
  TensorSpec t;
  t.name = name;
  t.datatype = type;
  t.dims = {-1};
  return t;
}

ModelSpec TestSpec() {
  ModelSpec s;
  s.name = "m";
  s.backend = "test";
  s.inputs.push_back(Tensor("IN", DataType::kFp32));
  s.outputs.push_back(Tensor("OUT", DataType::kFp32));
  return s;
}

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script = Script();
    table = {
        INFERD_BACKEND_ABI_VERSION, Init, Fini, ModelInit, ModelFini, InstInit, InstFini, Exec, 0};
    spec_ = TestSpec();
  }

  std::unique_ptr<BackendInstance> Instance(std::shared_ptr<Backend>& backend,
                                            std::unique_ptr<BackendModel>& model) {
    auto b = MakePluginBackend("test", TestEntry, "unit test");
    EXPECT_TRUE(b.ok()) << b.status().message();
    backend = *b;
    ModelLoadContext ctx;
    ctx.spec = &spec_;
    ctx.version = 1;
    auto m = backend->LoadModel(ctx);
    EXPECT_TRUE(m.ok()) << m.status().message();
    model = std::move(*m);
    auto i = model->CreateInstance(InstanceInfo{"m_0", InstanceKind::kCpu, 0});
    EXPECT_TRUE(i.ok());
    return std::move(*i);
  }

  // Runs one batch whose requests have the given ids.
  std::vector<ExecutionItem> Run(BackendInstance& inst, const std::vector<std::string>& ids) {
    requests_.clear();
    responses_.clear();
    for (const auto& id : ids) {
      auto r = std::make_unique<InferRequest>();
      r->id = id;
      float v = 1;
      char* p = r->Allocate(4);
      std::memcpy(p, &v, 4);
      r->inputs.push_back(InferInput{"IN", DataType::kFp32, {1}, BufferView{p, 4}});
      requests_.push_back(std::move(r));
      responses_.push_back(std::make_unique<InferResponse>());
    }
    std::vector<ExecutionItem> items;
    for (size_t i = 0; i < ids.size(); ++i) {
      items.push_back(ExecutionItem{requests_[i].get(), responses_[i].get(), Status::Ok()});
    }
    inst.Execute(items);
    return items;
  }

  ModelSpec spec_;
  std::vector<std::unique_ptr<InferRequest>> requests_;
  std::vector<std::unique_ptr<InferResponse>> responses_;
};

TEST_F(PluginTest, RefusesATableOfAnotherAbiVersion) {
  table.abi_version = INFERD_BACKEND_ABI_VERSION + 1;
  auto b = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("built for backend ABI version 4"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("this server speaks versions 1 to 3"), std::string::npos);
  EXPECT_TRUE(script.log.empty()) << "initialize must not run";
}

TEST_F(PluginTest, RefusesNoTableAndMissingFunctions) {
  auto none = MakePluginBackend("test", NullEntry, "unit test");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("returned no table"), std::string::npos);
  table.instance_execute = nullptr;
  auto partial = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("has no 'instance_execute'"), std::string::npos);
  EXPECT_TRUE(script.log.empty());
}

TEST_F(PluginTest, InitializeAndModelErrorsCarryTheirMessage) {
  script.fail_initialize = true;
  auto b = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInternal);
  EXPECT_NE(b.status().message().find("failed to initialize: boom"), std::string::npos);

  script = Script();
  script.fail_model = true;
  auto ok = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_TRUE(ok.ok());
  ModelLoadContext ctx;
  ctx.spec = &spec_;
  auto m = (*ok)->LoadModel(ctx);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.status().message(), "model file is broken");
  ok->reset();
  // A failed model_initialize is not finalized; the backend is.
  EXPECT_EQ(script.log, (std::vector<std::string>{"initialize", "model_initialize m", "finalize"}));
}

// ABI v3: the capability bit is read from v3 tables only, and the
// execution's thread hint reaches the backend.
TEST_F(PluginTest, TheCpuThreadHintCapabilityAndValue) {
  auto plain = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->HonoursCpuThreadHint());
  table.capabilities = INFERD_BACKEND_CAP_CPU_THREAD_HINT;
  auto capable = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_TRUE(capable.ok());
  EXPECT_TRUE((*capable)->HonoursCpuThreadHint());
  table.abi_version = 2;  // a v2 table ends before `capabilities`: never read
  auto v2 = MakePluginBackend("test", TestEntry, "unit test");
  ASSERT_TRUE(v2.ok());
  EXPECT_FALSE((*v2)->HonoursCpuThreadHint());

  std::shared_ptr<Backend> backend;
  std::unique_ptr<BackendModel> model;
  auto inst = Instance(backend, model);
  Run(*inst, {"ok"});
  EXPECT_EQ(script.cpu_threads, 0u);  // no choice made
  InferRequest req;
  float v = 1;
  req.inputs.push_back(
      InferInput{"IN", DataType::kFp32, {1}, BufferView{reinterpret_cast<const char*>(&v), 4}});
  InferResponse resp;
  std::vector<ExecutionItem> items{ExecutionItem{&req, &resp, Status::Ok()}};
  items[0].cpu_threads = 3;
  inst->Execute(items);
  EXPECT_EQ(script.cpu_threads, 3u);
}

TEST_F(PluginTest, LifecycleRunsInOrderWhateverTheOwnersDo) {
  {
    std::shared_ptr<Backend> backend;
    std::unique_ptr<BackendModel> model;
    auto inst = Instance(backend, model);
    backend.reset();  // models keep their backend alive
    model.reset();    // instances keep their model alive
    auto items = Run(*inst, {"ok"});
    EXPECT_TRUE(items[0].status.ok());
  }
  EXPECT_EQ(script.log,
            (std::vector<std::string>{"initialize", "model_initialize m", "instance_initialize m_0",
                                      "instance_finalize", "model_finalize", "finalize"}));
}

TEST_F(PluginTest, OneFailedRequestLeavesTheOthers) {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<BackendModel> model;
  auto inst = Instance(backend, model);
  auto items = Run(*inst, {"ok", "fail", "ok"});
  EXPECT_TRUE(items[0].status.ok());
  EXPECT_EQ(items[1].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(items[1].status.message(), "no");
  EXPECT_TRUE(items[2].status.ok());
  ASSERT_EQ(responses_[0]->outputs.size(), 1u);
  EXPECT_EQ(responses_[0]->outputs[0].name, "OUT");
  EXPECT_EQ(responses_[0]->outputs[0].shape, Shape{1});
  EXPECT_TRUE(responses_[1]->outputs.empty());
}

TEST_F(PluginTest, OutputAllocationIsChecked) {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<BackendModel> model;
  auto inst = Instance(backend, model);
  auto items = Run(*inst, {"bad-name", "bad-type", "bad-size", "twice", "ok"});
  EXPECT_NE(items[0].status.message().find("'NOPE' is not an output"), std::string::npos);
  EXPECT_NE(items[1].status.message().find("INT32 differs from the configured FP32"),
            std::string::npos);
  EXPECT_NE(items[2].status.message().find("4 bytes do not fit shape [2]"), std::string::npos);
  EXPECT_NE(items[3].status.message().find("already allocated"), std::string::npos);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(items[i].status.code(), StatusCode::kInvalidArgument) << i;
    EXPECT_TRUE(responses_[i]->outputs.empty()) << i;
  }
  EXPECT_TRUE(items[4].status.ok());
}

TEST_F(PluginTest, ABatchErrorFailsTheRequestsNotFailedYet) {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<BackendModel> model;
  auto inst = Instance(backend, model);
  script.execute_returns_error = true;
  auto items = Run(*inst, {"ok", "fail"});
  EXPECT_EQ(items[0].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(items[0].status.message(), "batch");
  EXPECT_TRUE(responses_[0]->outputs.empty());
  EXPECT_EQ(items[1].status.message(), "no");
}

TEST_F(PluginTest, AnEscapedExceptionBecomesAnInternalError) {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<BackendModel> model;
  auto inst = Instance(backend, model);
  script.throw_in_execute = true;
  auto items = Run(*inst, {"ok", "ok"});
  for (const auto& item : items) {
    EXPECT_EQ(item.status.code(), StatusCode::kInternal);
    EXPECT_NE(item.status.message().find("instance_execute"), std::string::npos);
  }
}

TEST(PluginErrorTest, CodesOutsideTheRangeBecomeUnknown) {
  const InferdHostApi* h = HostApi();
  EXPECT_EQ(h->abi_version, INFERD_BACKEND_ABI_VERSION);
  InferdError* e = h->error_new(99, nullptr);
  EXPECT_STREQ(h->error_message(e), "");
  Status s = StatusFromPluginError(e);
  EXPECT_EQ(s.code(), StatusCode::kUnknown);
  EXPECT_FALSE(s.message().empty());
  EXPECT_TRUE(StatusFromPluginError(nullptr).ok());
}

// ---- shared libraries and the registry ---------------------------------------

TEST(PluginLibraryTest, RefusesALibraryBuiltForAnotherAbiVersion) {
  const std::string path = std::string(INFERD_TEST_BACKEND_DIR) + "/libinferd_wrong_abi.so";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  auto b = LoadPluginLibrary("wrong_abi", path);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(b.status().message().find("built for backend ABI version 42"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find(path), std::string::npos);
}

TEST(PluginLibraryTest, MissingFilesAndNonBackendsAreRefused) {
  auto missing = LoadPluginLibrary("x", "/nonexistent/libinferd_x.so");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  // A shared library without the entry symbol (libc exports no inferd_backend_entry).
  auto not_backend = LoadPluginLibrary("c", "libc.so.6");
  ASSERT_FALSE(not_backend.ok());
  EXPECT_NE(not_backend.status().message().find("not an inferd backend"), std::string::npos);
}

TEST(BackendRegistryTest, NamesComeFromBackendOrPlatform) {
  ModelSpec s;
  s.platform = "pytorch_libtorch";
  EXPECT_EQ(BackendRegistry::BackendName(s), "pytorch");
  s.platform = "onnxruntime_onnx";
  EXPECT_EQ(BackendRegistry::BackendName(s), "onnx");
  s.backend = "onnxruntime";
  EXPECT_EQ(BackendRegistry::BackendName(s), "onnx");
  s.backend = "identity";
  EXPECT_EQ(BackendRegistry::BackendName(s), "identity");
}

// libgomp reads its wait settings once, when libtorch loads it: the registry
// sets a short spin unless the operator chose a policy or a spin count.
TEST(BackendRegistryTest, SetsAShortOpenMpSpinUnlessTheOperatorChoseOne) {
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");
  BackendRegistry::WithBuiltins();
  ASSERT_NE(std::getenv("GOMP_SPINCOUNT"), nullptr);
  EXPECT_STREQ(std::getenv("GOMP_SPINCOUNT"), "10000");
  EXPECT_EQ(std::getenv("OMP_WAIT_POLICY"), nullptr);

  unsetenv("GOMP_SPINCOUNT");
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  BackendRegistry::WithBuiltins();
  EXPECT_EQ(std::getenv("GOMP_SPINCOUNT"), nullptr);

  unsetenv("OMP_WAIT_POLICY");
  setenv("GOMP_SPINCOUNT", "500", 1);
  BackendRegistry::WithBuiltins();
  EXPECT_STREQ(std::getenv("GOMP_SPINCOUNT"), "500");
  setenv("GOMP_SPINCOUNT", "10000", 1);  // as the other tests of this process expect
}

TEST(BackendRegistryTest, FindsBuiltinsAndLibrariesAndExplainsMisses) {
  auto r = BackendRegistry::WithBuiltins();
  ModelSpec s = TestSpec();
  for (const char* name : {"add_sub", "delay", "accumulator", "identity"}) {
    s.backend = name;
    auto b = r->Find(s);
    EXPECT_TRUE(b.ok()) << name << ": " << b.status().message();
  }
  s.backend = "no_such_backend";
  auto missing = r->Find(s);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("libinferd_no_such_backend.so does not exist"),
            std::string::npos)
      << missing.status().message();
  s.backend = "../etc";
  EXPECT_FALSE(r->Find(s).ok());

  auto other = std::make_unique<BackendRegistry>(INFERD_TEST_BACKEND_DIR);
  s.backend = "wrong_abi";
  auto refused = other->Find(s);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("ABI version 42"), std::string::npos);
}

TEST(BackendRegistryTest, TheIdentityExampleCopiesInputs) {
  auto r = BackendRegistry::WithBuiltins();
  ModelSpec s;
  s.name = "id";
  s.backend = "identity";
  s.inputs.push_back(Tensor("INPUT0", DataType::kInt32));
  s.outputs.push_back(Tensor("OUTPUT0", DataType::kInt32));
  auto b = r->Find(s);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ModelLoadContext ctx;
  ctx.spec = &s;
  auto m = (*b)->LoadModel(ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto inst = (*m)->CreateInstance(InstanceInfo{"id_0", InstanceKind::kCpu, 0});
  ASSERT_TRUE(inst.ok());
  InferRequest req;
  const int32_t values[3] = {1, -2, 3};
  req.inputs.push_back(InferInput{
      "INPUT0", DataType::kInt32, {3}, BufferView{reinterpret_cast<const char*>(values), 12}});
  InferResponse resp;
  std::vector<ExecutionItem> items{ExecutionItem{&req, &resp, Status::Ok()}};
  (*inst)->Execute(items);
  ASSERT_TRUE(items[0].status.ok()) << items[0].status.message();
  ASSERT_EQ(resp.outputs.size(), 1u);
  EXPECT_EQ(resp.outputs[0].name, "OUTPUT0");
  EXPECT_EQ(resp.outputs[0].shape, Shape{3});
  EXPECT_EQ(std::memcmp(resp.outputs[0].buffer.data(), values, 12), 0);

  // A config the example refuses: datatypes differ.
  s.outputs[0].datatype = DataType::kFp32;
  auto refused = (*b)->LoadModel(ctx);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("must have the datatype of input 'INPUT0'"),
            std::string::npos);
}

// The pytorch backend itself, given a KIND_GPU instance: with a libtorch
// that has no CUDA (Debian's) the instance fails with a reason that says so;
// the server turns that into the model's UNAVAILABLE reason. (inferd refuses
// KIND_GPU groups earlier when it sees no GPU at all: test_backends.py.)
TEST(PyTorchBackendTest, AGpuInstanceWithoutCudaLibtorchFailsWithTheReason) {
  const std::string model_dir = std::string(INFERD_SOURCE_DIR) + "/examples/models/simple_pytorch";
  if (!std::filesystem::exists(model_dir + "/1/model.pt")) {
    GTEST_SKIP() << "examples not generated (make models)";
  }
  auto r = BackendRegistry::WithBuiltins();
  ModelSpec s;
  s.name = "simple_pytorch";
  s.backend = "pytorch";
  s.max_batch_size = 8;
  for (const char* n : {"INPUT__0", "INPUT__1"}) s.inputs.push_back(Tensor(n, DataType::kInt32));
  for (const char* n : {"OUTPUT__0", "OUTPUT__1"}) s.outputs.push_back(Tensor(n, DataType::kInt32));
  auto b = r->Find(s);
  if (!b.ok()) GTEST_SKIP() << "no pytorch backend in this build: " << b.status().message();
  ModelLoadContext ctx;
  ctx.spec = &s;
  ctx.model_dir = model_dir;
  ctx.version_dir = model_dir + "/1";
  ctx.version = 1;
  auto m = (*b)->LoadModel(ctx);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto cpu = (*m)->CreateInstance(InstanceInfo{"simple_pytorch_0", InstanceKind::kCpu, 0});
  ASSERT_TRUE(cpu.ok()) << cpu.status().message();
  auto gpu = (*m)->CreateInstance(InstanceInfo{"simple_pytorch_gpu_0", InstanceKind::kGpu, 0});
  if (gpu.ok()) GTEST_SKIP() << "this libtorch runs on a GPU here";
  EXPECT_EQ(gpu.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(gpu.status().message().find("'simple_pytorch_gpu_0' is KIND_GPU on GPU 0"),
            std::string::npos)
      << gpu.status().message();
  EXPECT_TRUE(gpu.status().message().find("without CUDA") != std::string::npos ||
              gpu.status().message().find("no CUDA device") != std::string::npos)
      << gpu.status().message();

  // A bad COMPUTE_PRECISION is refused at load, naming the parameter.
  s.parameters["COMPUTE_PRECISION"] = "fp8";
  auto refused = (*b)->LoadModel(ctx);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("COMPUTE_PRECISION"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace inferd
