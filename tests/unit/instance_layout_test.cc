// The automatic instance layout's config rules (repository/
// instance_layout_config.h) and the scheduler's InstanceLayout
// (scheduler/instance_layout.h).
#include "scheduler/instance_layout.h"

#include <gtest/gtest.h>

#include "repository/instance_layout_config.h"
#include "repository/model_config_util.h"

namespace inferd {
namespace {

inference::ModelConfig Normalized(const std::string& text) {
  auto c = ParseModelConfigText("name: \"m\" backend: \"delay\" " + text, "config.pbtxt");
  EXPECT_TRUE(c.ok()) << c.status().message();
  Status s = NormalizeModelConfig("m", NormalizeOptions{}, *c);
  EXPECT_TRUE(s.ok()) << s.message();
  return *c;
}

std::string LayoutParameter(const inference::ModelConfig& c) {
  auto it = c.parameters().find(kInstanceLayoutParameter);
  return it == c.parameters().end() ? "" : it->second.string_value();
}

TEST(InstanceLayoutConfig, CountZeroOrNoGroupLeavesTheChoiceToTheServer) {
  struct Row {
    const char* config;
    const char* want;  // the parameter after normalisation
  };
  const Row rows[] = {
      {"", "auto"},
      {"instance_group { count: 0 }", "auto"},
      {"instance_group { kind: KIND_CPU }", "auto"},
      {"instance_group { count: 1 }", ""},
      {"instance_group { count: 2 kind: KIND_CPU }", ""},
      {"instance_group { count: 0 } instance_group { count: 0 }", ""},
      {"instance_group { count: 0 rate_limiter { resources { name: \"r\" count: 1 } } }", ""},
      {"sequence_batching { }", ""},
      {"parameters { key: \"instance_layout\" value { string_value: \"fixed\" } }", "fixed"},
      {"instance_group { count: 3 } "
       "parameters { key: \"instance_layout\" value { string_value: \"auto\" } }",
       "auto"},
  };
  for (const auto& r : rows) {
    const auto c = Normalized(r.config);
    EXPECT_EQ(LayoutParameter(c), r.want) << r.config;
    EXPECT_EQ(WantsAutomaticInstanceLayout(c), std::string(r.want) == "auto") << r.config;
    // Normalisation itself still gives every group a count of at least 1.
    for (const auto& g : c.instance_group()) EXPECT_GE(g.count(), 1) << r.config;
  }
}

TEST(InstanceLayoutConfig, RejectsOtherParameterValues) {
  auto c = ParseModelConfigText(
      "name: \"m\" backend: \"delay\" "
      "parameters { key: \"instance_layout\" value { string_value: \"many\" } }",
      "config.pbtxt");
  ASSERT_TRUE(c.ok());
  Status s = NormalizeModelConfig("m", NormalizeOptions{}, *c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("instance_layout"), std::string::npos);
}

TEST(InstanceLayoutConfig, ResolvedCountDependsOnTheBackend) {
  const auto c = Normalized("");
  const auto with = ResolveInstanceLayout(c, /*backend_honours_hints=*/true, 6);
  ASSERT_EQ(with.instance_group_size(), 1);
  EXPECT_EQ(with.instance_group(0).count(), 6);
  EXPECT_EQ(LayoutParameter(with), "auto");
  EXPECT_EQ(SpecFromConfig(with).instance_count, 6);
  const auto without = ResolveInstanceLayout(c, /*backend_honours_hints=*/false, 6);
  EXPECT_EQ(without.instance_group(0).count(), 1);
  EXPECT_EQ(LayoutParameter(without), "");
  // An explicit count is left alone whatever the backend.
  const auto fixed = Normalized("instance_group { count: 2 }");
  EXPECT_EQ(ResolveInstanceLayout(fixed, true, 6).instance_group(0).count(), 2);
  EXPECT_GE(AutomaticInstanceCount(), 1);
  EXPECT_LE(AutomaticInstanceCount(), kMaxAutoInstances);
}

TEST(InstanceLayout, StartsWithOneActiveInstanceOfEveryThread) {
  InstanceLayout layout("m", 1, 4);
  EXPECT_TRUE(layout.Active(0));
  EXPECT_FALSE(layout.Active(1));
  const auto run = layout.Begin(1);
  EXPECT_EQ(run.threads, 4);
  const LayoutState s = layout.state();
  EXPECT_EQ(s.instances, 4);
  EXPECT_EQ(s.active, 1);
  EXPECT_EQ(s.threads, 4);
  EXPECT_FALSE(layout.End(run, 0));  // opens the first trial's window
}

TEST(InstanceLayout, TriesTheNextLayoutAfterATrial) {
  LayoutTunerOptions o;
  o.trial = std::chrono::nanoseconds(1);
  o.min_executions = 1;
  InstanceLayout layout("m", 1, 2, o);
  bool changed = false;
  for (int i = 0; i < 3 && !changed; ++i) changed = layout.End(layout.Begin(1), 0);
  EXPECT_TRUE(changed);
  EXPECT_EQ(layout.state().active, 2);
  EXPECT_EQ(layout.state().threads, 1);
  EXPECT_TRUE(layout.Active(1));
}

}  // namespace
}  // namespace inferd
