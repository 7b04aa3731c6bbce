// Model warmup (repository/model_warmup.h): building samples from the
// config with Triton's rules and error texts, running them on an instance
// (batch_size requests per execution, count repetitions, errors joined),
// and the whole path through ModelVersion::Load (a failing sample fails the
// load; warmup executions are not in the statistics; ensembles refused).
#include "repository/model_warmup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "core/request_validator.h"
#include "repository/model_config_util.h"
#include "repository/model_version.h"
#include "scheduler/dynamic_batch_scheduler.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

constexpr const char* kModel = R"(
name: "m"
backend: "add_sub"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] },
        { name: "INPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] },
         { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]
)";

// What one Execute saw.
struct SeenItem {
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  std::vector<std::string> data;
};

// Records every execution; fails every item with "boom" when asked.
class RecordingInstance final : public BackendInstance {
 public:
  void Execute(std::span<ExecutionItem> batch) override {
    std::vector<SeenItem> seen;
    for (auto& item : batch) {
      SeenItem s;
      for (const auto& in : item.request->inputs) {
        s.names.push_back(in.name);
        s.shapes.push_back(in.shape);
        s.data.emplace_back(in.data.data, in.data.byte_size);
      }
      seen.push_back(std::move(s));
      if (fail) item.status = Internal("boom");
    }
    executions.push_back(std::move(seen));
    threads.push_back(std::this_thread::get_id());
  }
  bool fail = false;
  std::vector<std::vector<SeenItem>> executions;
  std::vector<std::thread::id> threads;  // of each execution
};

class ModelWarmupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("inferd_warmup_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "m" / "1");
    fs::create_directories(dir_ / "m" / "warmup");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string ModelDir() const { return (dir_ / "m").string(); }
  void WriteFile(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / "m" / "warmup" / name, std::ios::binary) << bytes;
  }

  static inference::ModelConfig Config(const std::string& warmup) {
    auto c = ParseModelConfigText(std::string(kModel) + warmup, "m/config.pbtxt");
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? *c : inference::ModelConfig();
  }

  StatusOr<std::vector<WarmupSample>> Build(const std::string& warmup) {
    return BuildWarmupSamples(Config(warmup), ModelDir());
  }

  fs::path dir_;
};

constexpr const char* kZero = R"(
model_warmup [ { name: "zeros" batch_size: 3 count: 2
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } }
  inputs { key: "INPUT1" value { data_type: TYPE_INT32 dims: [ 4 ] random_data: true } } } ]
)";

TEST_F(ModelWarmupTest, ZeroAndRandomDataGetTheBatchDimension) {
  auto s = Build(kZero);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 1u);
  const WarmupSample& w = (*s)[0];
  EXPECT_EQ(w.name, "zeros");
  EXPECT_EQ(w.batch_size, 3u);
  EXPECT_EQ(w.count, 2u);
  ASSERT_EQ(w.inputs.size(), 2u);
  EXPECT_EQ(w.inputs[0].name, "INPUT0");
  EXPECT_EQ(w.inputs[0].shape, (Shape{1, 4}));
  EXPECT_EQ(*w.inputs[0].data, std::string(16, '\0'));
  EXPECT_EQ(w.inputs[1].data->size(), 16u);
}

TEST_F(ModelWarmupTest, BatchSizeZeroIsSkippedAndCountZeroRunsOnce) {
  auto s = Build(R"(
model_warmup [ { name: "skipped" batch_size: 0
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } } },
  { name: "once" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } } ]
)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].name, "once");
  EXPECT_EQ((*s)[0].count, 1u);
}

TEST_F(ModelWarmupTest, RandomStringsAreEmptyStrings) {
  auto s = Build(R"(
model_warmup [ { name: "s" batch_size: 1
  inputs { key: "TEXT" value { data_type: TYPE_STRING dims: [ 2 ] random_data: true } } } ]
)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const WarmupInput& in = (*s)[0].inputs[0];
  EXPECT_EQ(*in.data, std::string(8, '\0'));  // two zero lengths
  EXPECT_FALSE(in.model_input);
  EXPECT_EQ(in.shape, (Shape{2}));  // not a model input: no batch dimension
}

TEST_F(ModelWarmupTest, FileDataIsReadFromWarmupDirAndCut) {
  WriteFile("in0", std::string(16, '\1') + "extra");
  auto s = Build(R"(
model_warmup [ { name: "f" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "in0" } } } ]
)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*(*s)[0].inputs[0].data, std::string(16, '\1'));
}

TEST_F(ModelWarmupTest, ShortFileHasTritonsText) {
  WriteFile("short", std::string(10, '\1'));
  auto s = Build(R"(
model_warmup [ { name: "f" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "short" } } } ]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "[request id: <id_unknown>] warmup setting expects 16 bytes, but the data provided "
            "from shortonly has 10 bytes");
}

TEST_F(ModelWarmupTest, MissingOrEscapingFileFails) {
  auto s = Build(R"(
model_warmup [ { name: "f" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "nope" } } } ]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'warmup/nope'"), std::string::npos) << s.status().message();
  s = Build(R"(
model_warmup [ { name: "f" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "../config.pbtxt" } } } ]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("under the model's warmup/ directory"), std::string::npos)
      << s.status().message();
}

TEST_F(ModelWarmupTest, VariableDimsAndMissingDataKindHaveTritonsTexts) {
  auto s = Build(R"(
model_warmup [ { name: "v" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } } } ]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "warmup setting expects all variable-size dimensions are specified for input "
            "'INPUT0'");
  s = Build(R"(
model_warmup [ { name: "k" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] } } } ]
)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "[request id: <id_unknown>] warmup setting expects input 'INPUT0' to have "
            "input_data_type set");
}

TEST_F(ModelWarmupTest, RunsBatchSizeRequestsPerExecutionCountTimes) {
  auto config = Config(kZero);
  auto samples = BuildWarmupSamples(config, ModelDir());
  ASSERT_TRUE(samples.ok());
  const ModelSpec spec = SpecFromConfig(config);
  RecordingInstance inst;
  ASSERT_TRUE(RunWarmup(*samples, spec, {"m", 1, &spec}, inst, RealClock::Get()).ok());
  ASSERT_EQ(inst.executions.size(), 2u);  // count
  for (const auto& e : inst.executions) {
    ASSERT_EQ(e.size(), 3u);  // batch_size
    EXPECT_EQ(e[0].names, (std::vector<std::string>{"INPUT0", "INPUT1"}));
    EXPECT_EQ(e[0].shapes[0], (Shape{1, 4}));
    EXPECT_EQ(e[0].data[0], std::string(16, '\0'));
    EXPECT_EQ(e[0].data[1], e[2].data[1]);  // random data drawn once per sample
  }
}

TEST_F(ModelWarmupTest, FailedRequestsFailTheSampleWithEveryError) {
  auto config = Config(kZero);
  auto samples = BuildWarmupSamples(config, ModelDir());
  ASSERT_TRUE(samples.ok());
  const ModelSpec spec = SpecFromConfig(config);
  RecordingInstance inst;
  inst.fail = true;
  Status st = RunWarmup(*samples, spec, {"m", 1, &spec}, inst, RealClock::Get());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "failed to run warmup sample 'zeros': boom; boom; boom; ");
  EXPECT_EQ(inst.executions.size(), 1u);  // stops at the first failing repetition
}

TEST_F(ModelWarmupTest, RequestsAreValidatedAgainstTheModel) {
  auto config = Config(R"(
model_warmup [ { name: "wrong" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }
  inputs { key: "INPUT1" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } } ]
)");
  auto samples = BuildWarmupSamples(config, ModelDir());
  ASSERT_TRUE(samples.ok());
  const ModelSpec spec = SpecFromConfig(config);
  RecordingInstance inst;
  Status st = RunWarmup(*samples, spec, {"m", 1, &spec}, inst, RealClock::Get());
  EXPECT_EQ(st.message().rfind("failed to run warmup sample 'wrong': ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("INPUT0"), std::string::npos) << st.message();
  EXPECT_TRUE(inst.executions.empty());
}

// Finishes a promise with the request's outcome.
class PromiseSink final : public InferResponseSink {
 public:
  explicit PromiseSink(std::promise<Status>& p) : p_(p) {}
  void Send(std::unique_ptr<InferResponse> /*response*/, bool final) override {
    if (final) p_.set_value(Status::Ok());
  }
  void Finish(Status status) override { p_.set_value(status); }

 private:
  std::promise<Status>& p_;
};

TEST_F(ModelWarmupTest, WarmupRunsOnTheThreadThatServesTheRequests) {
  auto config = Config(kZero);
  const ModelSpec spec = SpecFromConfig(config);
  const ModelIdentity identity{"m", 1, &spec};
  auto warmup = InstanceWarmup::Create(config, ModelDir(), identity, 1, RealClock::Get());
  ASSERT_TRUE(warmup.ok() && *warmup);
  auto owned = std::make_unique<RecordingInstance>();
  RecordingInstance* inst = owned.get();
  std::vector<std::unique_ptr<BackendInstance>> instances;
  instances.push_back(std::move(owned));
  SchedulerConfig sched = SchedulerConfigFromConfig(config);
  sched.instance_start = [w = *warmup](size_t i, BackendInstance& b) { w->Run(i, b); };
  ModelStats stats;
  DynamicBatchScheduler scheduler(identity, sched, std::move(instances), &stats, RealClock::Get());
  ASSERT_TRUE((*warmup)->Wait().ok());
  ASSERT_EQ(inst->executions.size(), 2u);  // before any request

  std::promise<Status> done;
  auto pending = std::make_unique<PendingRequest>();
  pending->request = std::make_unique<InferRequest>();
  std::string zeros(16, '\0');
  for (const char* name : {"INPUT0", "INPUT1"}) {
    pending->request->inputs.push_back(
        {name, DataType::kInt32, {1, 4}, {zeros.data(), zeros.size()}});
  }
  ASSERT_TRUE(ValidateRequest(spec, *pending->request).ok());
  pending->sink = std::make_unique<PromiseSink>(done);
  scheduler.Enqueue(std::move(pending));
  EXPECT_TRUE(done.get_future().get().ok());
  scheduler.Stop();
  ASSERT_EQ(inst->threads.size(), 3u);
  EXPECT_EQ(inst->threads[0], inst->threads[2]);  // warmup and the request: one thread
  EXPECT_NE(inst->threads[0], std::this_thread::get_id());
  EXPECT_EQ(stats.Snapshot().execution_count, 1u);  // the request only
}

// Through ModelVersion::Load with the built-in add_sub backend.
class WarmupLoadTest : public ModelWarmupTest {
 protected:
  StatusOr<std::shared_ptr<ModelVersion>> LoadVersion(const std::string& warmup) {
    auto config = Config(warmup);
    NormalizeOptions options;
    INFERD_RETURN_IF_ERROR(NormalizeModelConfig("m", options, config));
    VersionServices services;
    services.registry = registry_.get();
    return ModelVersion::Load(config, ModelDir(), 1, services);
  }
  std::unique_ptr<BackendRegistry> registry_ = BackendRegistry::WithBuiltins();
};

TEST_F(WarmupLoadTest, WarmupIsNotCountedInStatistics) {
  auto v = LoadVersion(kZero);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ((*v)->stats().Snapshot().execution_count, 0u);
  EXPECT_EQ((*v)->stats().Snapshot().inference_count, 0u);
  (*v)->Stop();
}

TEST_F(WarmupLoadTest, AFailingSampleFailsTheLoad) {
  WriteFile("short", "x");
  auto v = LoadVersion(R"(
model_warmup [ { name: "f" batch_size: 1
  inputs { key: "INPUT0" value { data_type: TYPE_INT32 dims: [ 4 ] input_data_file: "short" } }
  inputs { key: "INPUT1" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } } ]
)");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("only has 1 bytes"), std::string::npos)
      << v.status().message();
}

TEST(WarmupConfigTest, EnsemblesAreRefusedWithTritonsText) {
  auto c = ParseModelConfigText(R"(
name: "ens"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 4 ] } ]
ensemble_scheduling { step [ { model_name: "m" model_version: -1
  input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
model_warmup [ { name: "w" batch_size: 1
  inputs { key: "IN" value { data_type: TYPE_INT32 dims: [ 4 ] zero_data: true } } } ]
)",
                                "ens/config.pbtxt");
  ASSERT_TRUE(c.ok()) << c.status().message();
  NormalizeOptions options;
  Status st = NormalizeModelConfig("ens", options, *c);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("model_warmup can not be specified for ensemble 'ens'"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace inferd
