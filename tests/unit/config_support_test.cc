// Config fields inferd refuses or warns about (repository/config_support.h)
// and the load-time checks of implicit sequence state: one table row per
// field, each parsed from config.pbtxt text and normalised as a load does.
#include "repository/config_support.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "repository/model_config_util.h"
#include "repository/sequence_state_config.h"

namespace inferd {
namespace {

// A minimal loadable model; rows append their field.
const char kBase[] =
    "name: \"m\"\nbackend: \"identity\"\nmax_batch_size: 8\n"
    "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n"
    "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ 4 ] } ]\n";

const char kSequence[] =
    "name: \"m\"\nbackend: \"identity\"\nmax_batch_size: 8\n"
    "input [ { name: \"INPUT\" data_type: TYPE_INT32 dims: [ 1 ] } ]\n"
    "output [ { name: \"OUTPUT\" data_type: TYPE_INT32 dims: [ 1 ] } ]\n";

struct Outcome {
  Status status;
  std::vector<std::string> warnings;
};

Outcome Load(const std::string& text) {
  Outcome out;
  auto c = ParseModelConfigText(text, "m/config.pbtxt");
  if (!c.ok()) {
    out.status = c.status();
    return out;
  }
  NormalizeOptions options;
  options.warnings = &out.warnings;
  out.status = NormalizeModelConfig("m", options, *c);
  return out;
}

struct Row {
  const char* base;
  const char* extra;  // appended to the base config
  const char* field;  // named in the reason or the warning
};

const Row kRefused[] = {
    {kBase, "runtime: \"libmine.so\"\n", "'runtime'"},
    {kBase, "input [ { name: \"S\" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true } ]\n",
     "'input.is_shape_tensor' (input 'S')"},
    {kBase, "output [ { name: \"S\" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true } ]\n",
     "'output.is_shape_tensor' (output 'S')"},
    {kBase,
     "input [ { name: \"R\" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true } ]\n",
     "'input.allow_ragged_batch' (input 'R')"},
    {kBase,
     "input [ { name: \"N\" data_type: TYPE_INT32 dims: [ 1 ] is_non_linear_format_io: true } ]\n",
     "'input.is_non_linear_format_io'"},
    {kBase,
     "output [ { name: \"N\" data_type: TYPE_INT32 dims: [ 1 ] is_non_linear_format_io: true "
     "} ]\n",
     "'output.is_non_linear_format_io'"},
    {kBase,
     "batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: \"INPUT0\" data_type: TYPE_FP32 "
     "source_input: \"INPUT0\" } ]\n",
     "'batch_input'"},
    {kBase, "batch_output [ { target_name: \"OUTPUT0\" source_input: \"INPUT0\" } ]\n",
     "'batch_output'"},
    {kSequence, "sequence_batching { iterative_sequence: true }\n",
     "'sequence_batching.iterative_sequence'"},
    {kSequence,
     "sequence_batching { state [ { input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 "
     "dims: [ 1 ] } ] }\nmodel_transaction_policy { decoupled: true }\n",
     // Until the decoupled refusal goes (issue 23, core), that one comes first.
     "decoupled"},
    {kBase,
     "instance_group [ { kind: KIND_CPU secondary_devices [ { kind: KIND_NVDLA device_id: 0 } ] "
     "} ]\n",
     "'instance_group.secondary_devices'"},
    {kBase, "instance_group [ { kind: KIND_CPU passive: true } ]\n", "'instance_group.passive'"},
    {kBase, "cc_model_filenames { key: \"7.5\" value: \"model_t4.plan\" }\n",
     "'cc_model_filenames'"},
    {kBase, "model_operations { op_library_filename: \"libops.so\" }\n", "'model_operations'"},
    {kBase, "model_repository_agents { agents [ { name: \"checksum\" } ] }\n",
     "'model_repository_agents'"},
};

class RefusedField : public ::testing::TestWithParam<Row> {};

TEST_P(RefusedField, FailsTheLoadNamingTheField) {
  const Row& row = GetParam();
  Outcome o = Load(std::string(row.base) + row.extra);
  ASSERT_FALSE(o.status.ok()) << row.extra;
  EXPECT_EQ(o.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status.message().find(row.field), std::string::npos) << o.status.message();
}

INSTANTIATE_TEST_SUITE_P(ConfigSupport, RefusedField, ::testing::ValuesIn(kRefused));

const Row kWarned[] = {
    {kBase, "optimization { graph { level: 1 } }\n", "'optimization.graph'"},
    {kBase, "optimization { priority: PRIORITY_MAX }\n", "'optimization.priority'"},
    {kBase, "optimization { cuda { graphs: true } }\n", "'optimization.cuda'"},
    {kBase,
     "optimization { execution_accelerators { gpu_execution_accelerator [ { name: \"tensorrt\" } "
     "] } }\n",
     "'optimization.execution_accelerators'"},
    {kBase, "optimization { gather_kernel_buffer_threshold: 4 }\n",
     "'optimization.gather_kernel_buffer_threshold'"},
    {kBase, "optimization { eager_batching: true }\n", "'optimization.eager_batching'"},
    {kSequence, "sequence_batching { direct { minimum_slot_utilization: 0.5 } }\n",
     "'sequence_batching.direct.minimum_slot_utilization'"},
    {kSequence, "sequence_batching { oldest { max_candidate_sequences: 4 } }\n",
     "'sequence_batching.oldest.max_candidate_sequences'"},
    {kSequence, "sequence_batching { oldest { preserve_ordering: true } }\n",
     "'sequence_batching.oldest.preserve_ordering'"},
    {kSequence,
     "sequence_batching { state [ { input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 "
     "dims: [ 1 ] use_same_buffer_for_input_output: true } ] }\n",
     "'sequence_batching.state.use_same_buffer_for_input_output' (state 'IS')"},
    {kSequence,
     "sequence_batching { state [ { input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 "
     "dims: [ 1 ] use_growable_memory: true } ] }\n",
     "'sequence_batching.state.use_growable_memory'"},
    {kBase, "instance_group [ { kind: KIND_CPU profile: \"0\" } ]\n", "'instance_group.profile'"},
    {kBase, "instance_group [ { kind: KIND_CPU host_policy: \"numa0\" } ]\n",
     "'instance_group.host_policy'"},
    {kBase, "metric_tags { key: \"team\" value: \"a\" }\n", "'metric_tags'"},
    {kBase,
     "model_metrics { metric_control [ { metric_identifier { family: \"nv_x\" } "
     "histogram_options { buckets: [ 1, 2 ] } } ] }\n",
     "'model_metrics'"},
};

class WarnedField : public ::testing::TestWithParam<Row> {};

TEST_P(WarnedField, LoadsWithAWarningNamingTheField) {
  const Row& row = GetParam();
  Outcome o = Load(std::string(row.base) + row.extra);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  ASSERT_EQ(o.warnings.size(), 1u);
  EXPECT_NE(o.warnings[0].find(row.field), std::string::npos) << o.warnings[0];
}

INSTANTIATE_TEST_SUITE_P(ConfigSupport, WarnedField, ::testing::ValuesIn(kWarned));

TEST(ConfigSupportTest, PlainConfigsHaveNoFindings) {
  Outcome o = Load(kBase);
  EXPECT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_TRUE(o.warnings.empty());
  // Defaults the normaliser itself writes are not findings, nor an empty
  // rate_limiter, a runtime naming the backend's own library, or cache off.
  o = Load(std::string(kBase) +
           "runtime: \"libtriton_identity.so\"\nresponse_cache { enable: false }\n"
           "instance_group [ { kind: KIND_CPU rate_limiter { } } ]\n"
           "optimization { input_pinned_memory { enable: true } }\n");
  EXPECT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_TRUE(o.warnings.empty());
}

// The rate limiter honours instance_group.rate_limiter (issue 24; with
// --rate-limit=off it is ignored, as in Triton): no finding.
TEST(ConfigSupportTest, RateLimiterIsAccepted) {
  Outcome o = Load(std::string(kBase) +
                   "instance_group [ { name: \"g\" kind: KIND_CPU rate_limiter { resources [ { "
                   "name: \"R1\" global: true count: 2 } ] priority: 2 } } ]\n");
  EXPECT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_TRUE(o.warnings.empty());
}

TEST(ConfigSupportTest, ImageFormatNeedsThreeDims) {
  const std::string nchw =
      "name: \"m\"\nbackend: \"identity\"\nmax_batch_size: 8\n"
      "input [ { name: \"image\" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 8, 8 ] } ]\n"
      "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 10 ] } ]\n";
  EXPECT_TRUE(Load(nchw).status.ok());
  Outcome o = Load(
      "name: \"m\"\nbackend: \"identity\"\nmax_batch_size: 8\n"
      "input [ { name: \"image\" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 64 ] } ]\n"
      "output [ { name: \"OUT\" data_type: TYPE_FP32 dims: [ 10 ] } ]\n");
  ASSERT_FALSE(o.status.ok());
  EXPECT_NE(o.status.message().find("'format' FORMAT_NHWC needs 3 dims"), std::string::npos)
      << o.status.message();
}

TEST(ConfigSupportTest, SequenceControlsSayHowTheyAreDelivered) {
  const struct {
    const char* control;
    const char* error;  // "" when valid
  } kCases[] = {
      {"kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ]", ""},
      {"kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ]", ""},
      {"kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ]", ""},
      {"kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING", ""},
      {"kind: CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_START needs exactly one of"},
      {"kind: CONTROL_SEQUENCE_START int32_false_true: [ 1 ]", "with two values"},
      {"kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ]",
       "needs exactly one of"},
      {"kind: CONTROL_SEQUENCE_CORRID", "needs 'data_type' TYPE_UINT64"},
      {"kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32", "got TYPE_FP32"},
  };
  for (const auto& c : kCases) {
    Outcome o = Load(std::string(kSequence) +
                     "sequence_batching { control_input [ { name: \"C\" control [ { " + c.control +
                     " } ] } ] }\n");
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(o.status.ok()) << c.control << ": " << o.status.message();
    } else {
      ASSERT_FALSE(o.status.ok()) << c.control;
      EXPECT_NE(o.status.message().find(c.error), std::string::npos) << o.status.message();
      EXPECT_NE(o.status.message().find("control_input 'C'"), std::string::npos);
    }
  }
}

// ---- implicit state: load-time checks ----

std::string WithState(const std::string& state) {
  return std::string(kSequence) + "sequence_batching { state [ { " + state + " } ] }\n";
}

struct StateRow {
  const char* state;
  const char* error;  // "" when valid
};

const StateRow kStates[] = {
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ -1 ]", ""},
    {"input_name: \"IS\" output_name: \"OUTPUT\" data_type: TYPE_INT32 dims: [ 1 ]", ""},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_FP32 dims: [ 2 ] initial_state { "
     "name: \"i\" data_type: TYPE_FP32 dims: [ 2 ] zero_data: true }",
     ""},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ 1 ] data_file: \"init.bin\" }",
     ""},
    {"output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ]", "must both be set"},
    {"input_name: \"INPUT\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ]",
     "'input_name' is already an input"},
    {"input_name: \"IS\" output_name: \"OS\" dims: [ 1 ]", "'data_type' must be set"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 0 ]",
     "dims must be positive or -1"},
    {"input_name: \"IS\" output_name: \"OUTPUT\" data_type: TYPE_FP32 dims: [ 1 ]",
     "output 'OUTPUT' is TYPE_INT32 but the state is TYPE_FP32"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ] initial_state { "
     "data_type: TYPE_FP32 dims: [ 1 ] zero_data: true }",
     "differs from the state's TYPE_INT32"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ -1 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ -1 ] zero_data: true }",
     "dims must be positive, got -1"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 2 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ 3 ] zero_data: true }",
     "do not match the state's dims"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ 1 ] }",
     "set 'zero_data' or 'data_file'"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ 1 ] data_file: \"../x\" }",
     "'data_file' must name a file under the model's initial_state/ directory"},
    {"input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 1 ] initial_state { "
     "data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } initial_state { data_type: TYPE_INT32 "
     "dims: [ 1 ] zero_data: true }",
     "at most one 'initial_state'"},
};

class StateConfig : public ::testing::TestWithParam<StateRow> {};

TEST_P(StateConfig, IsCheckedAtLoad) {
  const StateRow& row = GetParam();
  Outcome o = Load(WithState(row.state));
  if (std::string(row.error).empty()) {
    EXPECT_TRUE(o.status.ok()) << o.status.message();
  } else {
    ASSERT_FALSE(o.status.ok()) << row.state;
    EXPECT_NE(o.status.message().find(row.error), std::string::npos) << o.status.message();
  }
}

INSTANTIATE_TEST_SUITE_P(ConfigSupport, StateConfig, ::testing::ValuesIn(kStates));

TEST(ConfigSupportTest, TwoStatesMayNotShareAnOutput) {
  Outcome o = Load(std::string(kSequence) +
                   "sequence_batching { state [ { input_name: \"A\" output_name: \"S\" "
                   "data_type: TYPE_INT32 dims: [ 1 ] }, { input_name: \"B\" output_name: \"S\" "
                   "data_type: TYPE_INT32 dims: [ 1 ] } ] }\n");
  ASSERT_FALSE(o.status.ok());
  EXPECT_NE(o.status.message().find("is another state's output"), std::string::npos);
}

TEST(ConfigSupportTest, InitialStatesAreReadFromTheModelDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "inferd_state_config_test";
  fs::create_directories(dir / "initial_state");
  {
    std::ofstream f(dir / "initial_state" / "init.bin", std::ios::binary);
    const int32_t v[2] = {7, -3};
    f.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  auto c = ParseModelConfigText(
      WithState("input_name: \"IS\" output_name: \"OUTPUT\" data_type: TYPE_INT32 dims: [ -1 ] "
                "initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: \"init.bin\" }") +
          "",
      "m/config.pbtxt");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(NormalizeModelConfig("m", {}, *c).ok());
  auto states = StatesFromConfig(*c, dir.string());
  ASSERT_TRUE(states.ok()) << states.status().message();
  ASSERT_EQ(states->size(), 1u);
  const SequenceStateConfig& s = (*states)[0];
  EXPECT_EQ(s.initial_shape, Shape({2}));
  ASSERT_EQ(s.initial_data.size(), 8u);
  int32_t first = 0;
  std::memcpy(&first, s.initial_data.data(), 4);
  EXPECT_EQ(first, 7);
  EXPECT_TRUE(s.output_is_model_output);

  // Without an initial state: zeros, variable dims taken as 1.
  auto z = ParseModelConfigText(
      WithState("input_name: \"IS\" output_name: \"OS\" data_type: TYPE_FP32 dims: [ -1, 3 ]"),
      "m/config.pbtxt");
  ASSERT_TRUE(z.ok());
  auto zs = StatesFromConfig(*z, dir.string());
  ASSERT_TRUE(zs.ok());
  EXPECT_EQ((*zs)[0].initial_shape, Shape({1, 3}));
  EXPECT_EQ((*zs)[0].initial_data, std::string(12, '\0'));
  EXPECT_FALSE((*zs)[0].output_is_model_output);

  // The backend's view carries the state tensors; a configured output once.
  ModelSpec backend = BackendSpecWithStates(SpecFromConfig(*c), *c);
  EXPECT_NE(backend.FindInput("IS"), nullptr);
  EXPECT_EQ(backend.outputs.size(), 1u);

  // A file too short for the state is refused.
  auto short_file = ParseModelConfigText(
      WithState("input_name: \"IS\" output_name: \"OS\" data_type: TYPE_INT32 dims: [ 4 ] "
                "initial_state { data_type: TYPE_INT32 dims: [ 4 ] data_file: \"init.bin\" }"),
      "m/config.pbtxt");
  ASSERT_TRUE(short_file.ok());
  auto bad = StatesFromConfig(*short_file, dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("holds 8 bytes, the state needs 16"), std::string::npos)
      << bad.status().message();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace inferd
