#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <sstream>

#include "repository/model_config_util.h"
#include "repository/version_policy.h"

namespace inferd {
namespace {

// `simple` of the canonical test repository with a dynamic batcher added.
std::string SimpleConfig() {
  const std::string path =
      std::string(INFERD_SOURCE_DIR) + "/tests/data/models/simple/config.pbtxt";
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str() + "dynamic_batching { max_queue_delay_microseconds: 100 }\n";
}
const std::string kSimple = SimpleConfig();

TEST(ModelConfigTest, ReadsTheCanonicalSimpleConfig) {
  EXPECT_NE(kSimple.find("name: \"simple\""), std::string::npos)
      << "cannot read tests/data/models/simple/config.pbtxt under " << INFERD_SOURCE_DIR;
}

TEST(ModelConfigTest, ParsesAndNormalisesTritonConfig) {
  auto c = ParseModelConfigText(kSimple, "simple/config.pbtxt");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(NormalizeModelConfig("simple", {}, *c).ok());
  EXPECT_EQ(c->version_policy().latest().num_versions(), 1u);
  ASSERT_EQ(c->instance_group_size(), 1);
  EXPECT_EQ(c->instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);
  EXPECT_EQ(c->instance_group(0).count(), 1);
  EXPECT_EQ(c->instance_group(0).name(), "simple");
  // No preferred sizes: adaptive batching, shown in the parameters.
  EXPECT_EQ(c->dynamic_batching().preferred_batch_size_size(), 0);
  EXPECT_EQ(c->parameters().at("batching").string_value(), "adaptive");
  EXPECT_TRUE(c->optimization().input_pinned_memory().enable());
  ModelSpec spec = SpecFromConfig(*c);
  EXPECT_EQ(spec.max_batch_size, 8);
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[0].datatype, DataType::kInt32);
  EXPECT_EQ(spec.inputs[0].dims, Shape({16}));
}

TEST(ModelConfigTest, SyntaxErrorNamesFileAndLine) {
  auto c = ParseModelConfigText("name: \"x\"\nmax_batch_size: eight\n", "x/config.pbtxt");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("x/config.pbtxt:2:"), std::string::npos)
      << c.status().message();
}

TEST(ModelConfigTest, UnknownFieldIsAnError) {
  auto c = ParseModelConfigText("name: \"x\"\nmax_batchsize: 8\n", "x/config.pbtxt");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("max_batchsize"), std::string::npos);
}

TEST(ModelConfigTest, NameMustMatchDirectory) {
  auto c = ParseModelConfigText(kSimple, "f");
  ASSERT_TRUE(c.ok());
  Status s = NormalizeModelConfig("other", {}, *c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("other"), std::string::npos);
}

TEST(ModelConfigTest, GpuKindWithoutGpuIsRefused) {
  auto c = ParseModelConfigText(std::string(kSimple) + "instance_group [{ kind: KIND_GPU }]", "f");
  ASSERT_TRUE(c.ok());
  Status s = NormalizeModelConfig("simple", {}, *c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("KIND_GPU"), std::string::npos);
}

TEST(ModelConfigTest, AutoKindIsGpuOnlyWhenTheGroupListsGpus) {
  auto kind_of = [](const std::string& group, int gpu_count) {
    auto c = ParseModelConfigText(std::string(kSimple) + group, "f");
    EXPECT_TRUE(c.ok());
    NormalizeOptions o;
    o.gpu_count = gpu_count;
    EXPECT_TRUE(NormalizeModelConfig("simple", o, *c).ok());
    return c->instance_group(0).kind();
  };
  using G = inference::ModelInstanceGroup;
  EXPECT_EQ(kind_of("", 1), G::KIND_CPU);  // no group: CPU even with a GPU
  EXPECT_EQ(kind_of("instance_group [{ count: 2 }]", 1), G::KIND_CPU);
  EXPECT_EQ(kind_of("instance_group [{ gpus: [0] }]", 1), G::KIND_GPU);
  // Listing a GPU that does not exist is an error, not a silent fall-back.
  auto missing = ParseModelConfigText(std::string(kSimple) + "instance_group [{ gpus: [1] }]", "f");
  ASSERT_TRUE(missing.ok());
  NormalizeOptions one;
  one.gpu_count = 1;
  Status s = NormalizeModelConfig("simple", one, *missing);
  EXPECT_NE(s.message().find("names GPU 1 which does not exist"), std::string::npos) << s.message();
  // KIND_GPU without gpus takes every GPU.
  auto c = ParseModelConfigText(std::string(kSimple) + "instance_group [{ kind: KIND_GPU }]", "f");
  ASSERT_TRUE(c.ok());
  NormalizeOptions two;
  two.gpu_count = 2;
  ASSERT_TRUE(NormalizeModelConfig("simple", two, *c).ok());
  EXPECT_EQ(c->instance_group(0).gpus_size(), 2);
}

TEST(ModelConfigTest, PlatformCompletesBackend) {
  auto c = ParseModelConfigText("platform: \"pytorch_libtorch\"", "f");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(NormalizeModelConfig("m", {}, *c).ok());
  EXPECT_EQ(c->backend(), "pytorch");
  EXPECT_EQ(c->default_model_filename(), "model.pt");
}

TEST(ModelConfigTest, JsonRenderingFollowsTriton) {
  auto c = ParseModelConfigText(kSimple, "f");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(NormalizeModelConfig("simple", {}, *c).ok());
  const std::string json = ModelConfigToJson(*c);
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_EQ(d["max_batch_size"].GetInt(), 8);
  EXPECT_TRUE(d["input"][0]["dims"][0].IsInt64()) << json;  // a bare number, not "16"
  EXPECT_STREQ(d["input"][0]["data_type"].GetString(), "TYPE_INT32");
  EXPECT_FALSE(d["input"][0]["optional"].GetBool());  // defaults are printed
  EXPECT_TRUE(d["dynamic_batching"]["max_queue_delay_microseconds"].IsUint64());
  EXPECT_STREQ(d["instance_group"][0]["kind"].GetString(), "KIND_CPU");
  EXPECT_EQ(d["version_policy"]["latest"]["num_versions"].GetInt(), 1);
  EXPECT_TRUE(d.HasMember("parameters"));
  EXPECT_FALSE(d.HasMember("sequence_batching"));
}

TEST(VersionPolicyTest, LatestAllSpecific) {
  const std::set<int64_t> avail = {1, 2, 3, 7};
  inference::ModelVersionPolicy p;
  EXPECT_EQ(VersionsToLoad(p, avail), std::set<int64_t>({7}));
  p.mutable_latest()->set_num_versions(2);
  EXPECT_EQ(VersionsToLoad(p, avail), std::set<int64_t>({3, 7}));
  p.mutable_all();
  EXPECT_EQ(VersionsToLoad(p, avail), avail);
  p.mutable_specific()->add_versions(2);
  p.mutable_specific()->add_versions(5);
  EXPECT_EQ(VersionsToLoad(p, avail), std::set<int64_t>({2}));
}

}  // namespace
}  // namespace inferd
