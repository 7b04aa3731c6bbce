#include "trace/tracer.h"

#include <gtest/gtest.h>

#include <thread>

namespace inferd::trace {
namespace {

class Recorder : public TraceCollector {
 public:
  void Collect(TraceGroup group) override {
    MutexLock lock(mu_);
    groups.push_back(std::move(group));
  }
  size_t size() {
    MutexLock lock(mu_);
    return groups.size();
  }
  Mutex mu_;
  std::vector<TraceGroup> groups;
};

TraceConfig Config(uint32_t level, uint32_t rate, int64_t count = -1) {
  TraceConfig c;
  c.level = level;
  c.rate = rate;
  c.count = count;
  c.file = "/unused";
  return c;
}

// How many of `n` requests for `model` are sampled.
int Sampled(Tracer& t, int n, const std::string& model = "m") {
  int hits = 0;
  for (int i = 0; i < n; ++i) hits += t.Sample(model) != nullptr;
  return hits;
}

TEST(TracerTest, OffByDefaultAndWithoutAFile) {
  Tracer off(TraceConfig{}, nullptr);
  EXPECT_FALSE(off.Active());
  EXPECT_EQ(off.Sample("m"), nullptr);
  TraceConfig no_file = Config(kTraceLevelTimestamps, 1);
  no_file.file.clear();
  Tracer t(no_file, nullptr);
  EXPECT_FALSE(t.Active());
  EXPECT_EQ(Sampled(t, 5), 0);
}

TEST(TracerTest, EveryRateThRequestStartingWithTheRateTh) {
  Tracer t(Config(kTraceLevelTimestamps, 3), nullptr);
  EXPECT_TRUE(t.Active());
  std::vector<bool> hits;
  for (int i = 0; i < 9; ++i) hits.push_back(t.Sample("m") != nullptr);
  EXPECT_EQ(hits, (std::vector<bool>{false, false, true, false, false, true, false, false, true}));
}

TEST(TracerTest, CountRunsOut) {
  Tracer t(Config(kTraceLevelTimestamps, 1, 2), nullptr);
  EXPECT_EQ(Sampled(t, 5), 2);
  EXPECT_EQ(t.Get("").count, 0);
  // A new count starts tracing again.
  TraceSettingUpdate u;
  u.count.value = 1;
  ASSERT_TRUE(t.Update("", u).ok());
  EXPECT_EQ(Sampled(t, 5), 1);
}

TEST(TracerTest, CountIsExactUnderConcurrency) {
  Tracer t(Config(kTraceLevelTimestamps, 1, 1000), nullptr);
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { hits += Sampled(t, 1000); });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(hits.load(), 1000);
  EXPECT_EQ(t.Get("").count, 0);
}

TEST(TracerTest, ModelOverridesFollowGlobalForTheRest) {
  Tracer t(Config(kTraceLevelOff, 1000), nullptr);
  EXPECT_FALSE(t.Active());
  TraceSettingUpdate model;
  model.level.value = kTraceLevelTimestamps;
  model.rate.value = 1;
  ASSERT_TRUE(t.Update("simple", model).ok());
  EXPECT_TRUE(t.Active());
  EXPECT_EQ(Sampled(t, 3, "simple"), 3);
  EXPECT_EQ(Sampled(t, 3, "other"), 0);
  // A global change of a field the model does not override reaches it.
  TraceSettingUpdate global;
  global.log_frequency.value = 7;
  global.rate.value = 50;
  ASSERT_TRUE(t.Update("", global).ok());
  EXPECT_EQ(t.Get("simple").log_frequency, 7u);
  EXPECT_EQ(t.Get("simple").rate, 1u);
  EXPECT_EQ(t.Get("").rate, 50u);
  // Clearing the model's fields: it follows the global setting again.
  TraceSettingUpdate clear;
  clear.level.clear = true;
  clear.rate.clear = true;
  ASSERT_TRUE(t.Update("simple", clear).ok());
  EXPECT_EQ(t.Get("simple").level, kTraceLevelOff);
  EXPECT_EQ(t.Get("simple").rate, 50u);
  EXPECT_FALSE(t.Active());
}

TEST(TracerTest, ClearingAGlobalFieldRestoresTheStartUpValue) {
  Tracer t(Config(kTraceLevelTimestamps, 10), nullptr);
  TraceSettingUpdate u;
  u.rate.value = 1;
  ASSERT_TRUE(t.Update("", u).ok());
  EXPECT_EQ(t.Get("").rate, 1u);
  TraceSettingUpdate clear;
  clear.rate.clear = true;
  ASSERT_TRUE(t.Update("", clear).ok());
  EXPECT_EQ(t.Get("").rate, 10u);
}

TEST(TracerTest, InvalidSettingsAreRefusedUnlessOff) {
  Tracer t(Config(kTraceLevelOff, 10), nullptr);
  TraceSettingUpdate u;
  u.level.value = kTraceLevelTimestamps;
  u.rate.value = 0;
  Status s = t.Update("", u);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Attempting to set invalid trace setting :sample rate must be non-zero");
  u.level.value = kTraceLevelOff;
  EXPECT_TRUE(t.Update("", u).ok());

  TraceConfig no_file = Config(kTraceLevelOff, 1);
  no_file.file.clear();
  Tracer nf(no_file, nullptr);
  TraceSettingUpdate on;
  on.level.value = kTraceLevelTimestamps;
  EXPECT_EQ(nf.Update("", on).message(),
            "Attempting to set invalid trace setting :trace file name is not given");
}

TEST(TracerTest, OpenTelemetryTracesPropagatedContextsAlways) {
  TraceConfig c = Config(kTraceLevelTimestamps, 0, 0);
  c.mode = TraceMode::kOpenTelemetry;
  c.file.clear();
  Tracer t(c, nullptr);
  EXPECT_TRUE(t.Active());
  EXPECT_EQ(Sampled(t, 5), 0);  // rate 0: only propagated requests
  TraceContext ctx;
  ctx.trace_id[0] = 1;
  ctx.span_id[0] = 2;
  ctx.flags = 0x01;  // sampled
  EXPECT_NE(t.Sample("m", ctx), nullptr);
  EXPECT_EQ(t.Get("").count, 0);  // forced traces take nothing from the count
  EXPECT_EQ(t.sampled(), 1u);
}

TEST(TracerTest, OpenTelemetryRespectsAnUnsampledCaller) {
  TraceConfig c = Config(kTraceLevelTimestamps, 1);  // every request without a context
  c.mode = TraceMode::kOpenTelemetry;
  c.file.clear();
  Tracer t(c, nullptr);
  TraceContext ctx;
  ctx.trace_id[0] = 1;
  ctx.span_id[0] = 2;
  ctx.flags = 0x02;  // random, not sampled: the caller records nothing
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.Sample("m", ctx), nullptr);
  EXPECT_EQ(t.sampled(), 0u);
  EXPECT_NE(t.Sample("m"), nullptr);  // the rate still applies to the others
}

TEST(TracerTest, ChildrenCompleteIntoTheirRoot) {
  auto recorder = std::make_shared<Recorder>();
  Tracer t(Config(kTraceLevelTimestamps, 1), recorder);
  auto root = t.Sample("ens");
  ASSERT_NE(root, nullptr);
  root->Stamp(activity::kHttpRecvStart, 5);
  root->Start("ens", 1, "req-1");
  auto step = RequestTrace::Child(root, "add");
  auto grandchild = RequestTrace::Child(step, "sub");
  step->Start("add", 3, "req-1");
  grandchild->Start("sub", 2, "req-1");
  const uint64_t root_id = root->id(), step_id = step->id();
  root.reset();
  EXPECT_EQ(recorder->size(), 0u);  // the steps still hold it
  step.reset();
  EXPECT_EQ(recorder->size(), 0u);
  grandchild.reset();
  ASSERT_EQ(recorder->size(), 1u);
  const TraceGroup& g = recorder->groups[0];
  EXPECT_EQ(g.root.id, root_id);
  EXPECT_EQ(g.root.model_version, 1);
  EXPECT_EQ(g.root.request_id, "req-1");
  ASSERT_EQ(g.children.size(), 2u);
  EXPECT_EQ(g.children[0].model_name, "add");
  EXPECT_EQ(g.children[0].parent_id, root_id);
  EXPECT_EQ(g.children[1].model_name, "sub");
  EXPECT_EQ(g.children[1].parent_id, step_id);
  EXPECT_EQ(g.root.timestamps.size(), 2u);
}

}  // namespace
}  // namespace inferd::trace
