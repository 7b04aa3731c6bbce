// When a model's config turns adaptive batching on (docs/batching.md): the
// normalised config shows the choice and the scheduler config carries it.
#include <gtest/gtest.h>

#include "repository/model_config_util.h"

namespace inferd {
namespace {

constexpr char kBase[] = R"(
name: "m"
backend: "identity"
max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_INT32 dims: [1] }]
output [{ name: "OUTPUT0" data_type: TYPE_INT32 dims: [1] }]
)";

struct Normalised {
  Status status;
  inference::ModelConfig config;
};

Normalised Normalise(const std::string& extra) {
  auto c = ParseModelConfigText(std::string(kBase) + extra, "m/config.pbtxt");
  EXPECT_TRUE(c.ok()) << c.status().message();
  Normalised n{NormalizeModelConfig("m", {}, *c), *c};
  return n;
}

std::string BatchingParameter(const inference::ModelConfig& c) {
  auto it = c.parameters().find("batching");
  return it == c.parameters().end() ? "" : it->second.string_value();
}

std::string Param(const char* value) {
  return std::string("parameters { key: \"batching\" value { string_value: \"") + value +
         "\" } }\n";
}

TEST(AdaptiveConfigTest, WhichConfigsBatchAdaptively) {
  struct Case {
    const char* what;
    std::string extra;
    bool adaptive;
    int preferred;  // preferred sizes after normalisation
  };
  const std::vector<Case> cases = {
      {"dynamic batching without preferred sizes", "dynamic_batching { }", true, 0},
      {"preferred sizes given: classic", "dynamic_batching { preferred_batch_size: [4] }", false,
       1},
      {"opted out: classic, preferred = max", "dynamic_batching { }\n" + Param("fixed"), false, 1},
      {"asked for without a dynamic_batching block", Param("adaptive"), true, 0},
      {"asked for, preferred sizes unused",
       "dynamic_batching { preferred_batch_size: [4] }\n" + Param("adaptive"), true, 1},
      {"no batching at all", "", false, 0},
  };
  for (const auto& c : cases) {
    Normalised n = Normalise(c.extra);
    ASSERT_TRUE(n.status.ok()) << c.what << ": " << n.status.message();
    const SchedulerConfig s = SchedulerConfigFromConfig(n.config);
    EXPECT_EQ(s.dynamic.adaptive, c.adaptive) << c.what;
    EXPECT_EQ(BatchingParameter(n.config) == "adaptive", c.adaptive) << c.what;
    EXPECT_EQ(n.config.dynamic_batching().preferred_batch_size_size(), c.preferred) << c.what;
    if (c.adaptive) {
      EXPECT_EQ(s.kind, SchedulerConfig::Kind::kDynamic) << c.what;
    }
  }
}

TEST(AdaptiveConfigTest, UnbatchedAndSequenceModelsStayClassic) {
  std::string unbatched = kBase;
  unbatched.replace(unbatched.find("max_batch_size: 8"), 17, "max_batch_size: 0");
  auto c = ParseModelConfigText(unbatched + "dynamic_batching { }\n", "m/config.pbtxt");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(NormalizeModelConfig("m", {}, *c).ok());
  EXPECT_FALSE(SchedulerConfigFromConfig(*c).dynamic.adaptive);
  Normalised seq = Normalise("sequence_batching { }\n" + Param("adaptive"));
  ASSERT_TRUE(seq.status.ok()) << seq.status.message();
  EXPECT_EQ(SchedulerConfigFromConfig(seq.config).kind, SchedulerConfig::Kind::kSequence);
  EXPECT_FALSE(seq.config.has_dynamic_batching());
}

TEST(AdaptiveConfigTest, UnknownValueIsRefused) {
  Normalised n = Normalise("dynamic_batching { }\n" + Param("sometimes"));
  EXPECT_FALSE(n.status.ok());
  EXPECT_NE(n.status.message().find("'batching' must be 'adaptive' or 'fixed'"), std::string::npos)
      << n.status.message();
}

}  // namespace
}  // namespace inferd
