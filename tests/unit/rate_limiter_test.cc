// RateLimiter: capacities (defaults, --rate-limit-resource, global vs per
// device), conflicts, mutual exclusion, the priority split, interruption,
// and the hooks in DynamicBatchScheduler (no overlap, no inline runs) and
// SequenceScheduler.
#include "scheduler/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "scheduler/dynamic_batch_scheduler.h"
#include "scheduler/sequence_scheduler.h"
#include "scheduler_test_util.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;
using Resources = std::vector<RateLimitResource>;

RateLimitedInstance Inst(const std::string& model, Resources resources, int device = 0,
                         uint32_t priority = 0) {
  RateLimitedInstance i;
  i.model = model;
  i.version = 1;
  i.instance = model + "_0";
  i.device = device;
  i.resources = std::move(resources);
  i.priority = priority;
  return i;
}

RateLimiter::Id RegisterOne(RateLimiter& rl, const RateLimitedInstance& i) {
  auto ids = rl.Register({i});
  EXPECT_TRUE(ids.ok()) << ids.status().message();
  return ids.ok() ? (*ids)[0] : 0;
}

std::vector<RateLimitResourceOverride> Flags(const std::vector<std::string>& values) {
  std::vector<RateLimitResourceOverride> out;
  for (const auto& v : values) {
    auto o = ParseRateLimitResource(v);
    EXPECT_TRUE(o.ok()) << v << ": " << o.status().message();
    if (o.ok()) out.push_back(*o);
  }
  return out;
}

TEST(RateLimiterTest, DefaultCapacityIsTheLargestCountAsked) {
  RateLimiter rl;
  // The example of Triton's rate limiter documentation (one device).
  RegisterOne(rl, Inst("A", {{"R1", false, 4}, {"R2", false, 4}}));
  RegisterOne(rl, Inst("B", {{"R2", false, 5}, {"R3", false, 10}, {"R4", false, 5}}));
  RegisterOne(rl, Inst("C", {{"R1", false, 1}, {"R3", false, 7}, {"R4", false, 2}}));
  const std::map<std::string, uint32_t> want{{"R1", 4}, {"R2", 5}, {"R3", 10}, {"R4", 5}};
  EXPECT_EQ(rl.Capacities(0), want);
  EXPECT_TRUE(rl.Capacities(RateLimiter::kGlobal).empty());
}

TEST(RateLimiterTest, FlagsOverridePerDeviceAndGlobally) {
  // The docs' two-device example: R1:10, R2:5:0, R2:8:1, R3:2 with R3
  // global in some model.
  RateLimiter rl(Flags({"R1:10", "R2:5:0", "R2:8:1", "R3:2"}));
  RegisterOne(rl, Inst("a", {{"R1", false, 1}, {"R2", false, 1}}, 0));
  RegisterOne(rl, Inst("b", {{"R1", false, 2}, {"R2", false, 3}}, 1));
  RegisterOne(rl, Inst("c", {{"R3", true, 1}}, 1));
  EXPECT_EQ(rl.Capacities(RateLimiter::kGlobal), (std::map<std::string, uint32_t>{{"R3", 2}}));
  EXPECT_EQ(rl.Capacities(0), (std::map<std::string, uint32_t>{{"R1", 10}, {"R2", 5}}));
  EXPECT_EQ(rl.Capacities(1), (std::map<std::string, uint32_t>{{"R1", 10}, {"R2", 8}}));
}

TEST(RateLimiterTest, ResourceFlagParsing) {
  auto o = ParseRateLimitResource("R2:8:1");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->name, "R2");
  EXPECT_EQ(o->count, 8u);
  EXPECT_EQ(o->device, 1);
  o = ParseRateLimitResource("gpu_mem:3");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->device, -1);
  for (const char* bad : {"R1", "R1:", ":3", "R1:x", "R1:-1", "R1:3:-1", "R1:3:0:1", "R1:3:a"}) {
    auto b = ParseRateLimitResource(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("--rate-limit-resource"), std::string::npos);
    EXPECT_NE(b.status().message().find(bad), std::string::npos) << b.status().message();
  }
}

TEST(RateLimiterTest, GlobalAndPerDeviceConflictIsRefused) {
  RateLimiter rl;
  RegisterOne(rl, Inst("a", {{"R", true, 1}}));
  auto b = rl.Register({Inst("b", {{"R", false, 1}})});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("'R' is global for model 'a'"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("per-device for model 'b'"), std::string::npos);
  // Within one version too; and nothing of a refused version stays.
  auto c = rl.Register({Inst("c", {{"S", false, 1}}), Inst("d", {{"S", true, 1}})});
  EXPECT_FALSE(c.ok());
  EXPECT_TRUE(rl.Capacities(0).empty());
}

TEST(RateLimiterTest, CapacityBelowAnInstanceCountIsRefused) {
  RateLimiter rl(Flags({"R1:1"}));
  auto r = rl.Register({Inst("m", {{"R1", false, 4}})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("could never run"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("1 copies on device 0, fewer than the 4"), std::string::npos)
      << r.status().message();
}

TEST(RateLimiterTest, OneCopyIsHeldByOneInstanceAtATime) {
  RateLimiter rl;
  const auto a = RegisterOne(rl, Inst("a", {{"R", false, 1}}));
  const auto b = RegisterOne(rl, Inst("b", {{"R", false, 1}}));
  ASSERT_TRUE(rl.Acquire(a));
  auto waiter = std::async(std::launch::async, [&] { return rl.Acquire(b); });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  rl.Release(a, false);
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  rl.Release(b, false);
  EXPECT_EQ(rl.ExecutionCount(a), 1u);
  EXPECT_EQ(rl.ExecutionCount(b), 1u);
}

TEST(RateLimiterTest, PerDeviceCopiesAreSeparateGlobalOnesAreNot) {
  RateLimiter rl;
  const auto d0 = RegisterOne(rl, Inst("a", {{"R", false, 1}}, 0));
  const auto d1 = RegisterOne(rl, Inst("b", {{"R", false, 1}}, 1));
  ASSERT_TRUE(rl.Acquire(d0));
  ASSERT_TRUE(rl.Acquire(d1));  // device 1 has its own copy: no wait
  rl.Release(d0, false);
  rl.Release(d1, false);

  const auto g0 = RegisterOne(rl, Inst("c", {{"G", true, 1}}, 0));
  const auto g1 = RegisterOne(rl, Inst("d", {{"G", true, 1}}, 1));
  ASSERT_TRUE(rl.Acquire(g0));
  auto waiter = std::async(std::launch::async, [&] { return rl.Acquire(g1); });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);  // one copy server-wide
  rl.Release(g0, false);
  EXPECT_TRUE(waiter.get());
  rl.Release(g1, false);
}

// Two instances that always have work, priority 1 and 2, one copy of R:
// the grants split 2:1 (execution_count × priority, smallest first).
TEST(RateLimiterTest, PrioritiesSplitTheExecutions) {
  RateLimiter rl;
  const auto hi = RegisterOne(rl, Inst("hi", {{"R", false, 1}}, 0, 1));
  const auto lo = RegisterOne(rl, Inst("lo", {{"R", false, 1}}, 0, 2));
  std::atomic<int> total{0};
  std::atomic<bool> stop{false};
  // Each loop: run, then release staged again at once (more work), so both
  // always wait for R and every grant is the policy's choice.
  auto run = [&](RateLimiter::Id id, bool held) {
    while (held || rl.Acquire(id)) {
      held = false;
      if (++total >= 300) stop = true;
      rl.Release(id, !stop);
      if (stop) break;
    }
  };
  // hi holds R until lo waits, so neither runs alone at the start.
  ASSERT_TRUE(rl.Acquire(hi));
  std::thread t2(run, lo, false);
  std::this_thread::sleep_for(20ms);
  std::thread t1(run, hi, true);
  t1.join();
  t2.join();
  const double h = static_cast<double>(rl.ExecutionCount(hi));
  const double l = static_cast<double>(rl.ExecutionCount(lo));
  ASSERT_GT(l, 0);
  EXPECT_NEAR(h / l, 2.0, 0.1) << h << " vs " << l;
}

TEST(RateLimiterTest, PriorityZeroBehavesAsOne) {
  RateLimiter rl;
  const auto zero = RegisterOne(rl, Inst("zero", {{"R", false, 1}}, 0, 0));
  const auto one = RegisterOne(rl, Inst("one", {{"R", false, 1}}, 0, 1));
  // zero runs first (earliest waiter on a tie), then one; then again zero.
  ASSERT_TRUE(rl.Acquire(zero));
  auto w = std::async(std::launch::async, [&] { return rl.Acquire(one); });
  std::this_thread::sleep_for(20ms);
  rl.Release(zero, true);  // tie at 1×1 vs 0×1 -> one (smaller)
  ASSERT_TRUE(w.get());
  rl.Release(one, false);
  EXPECT_TRUE(rl.Acquire(zero));  // granted when one released
  rl.Release(zero, false);
  EXPECT_EQ(rl.ExecutionCount(zero), 2u);
  EXPECT_EQ(rl.ExecutionCount(one), 1u);
}

TEST(RateLimiterTest, InterruptEndsAWaitAndIsOneShot) {
  RateLimiter rl;
  const auto a = RegisterOne(rl, Inst("a", {{"R", false, 1}}));
  const auto b = RegisterOne(rl, Inst("b", {{"R", false, 1}}));
  ASSERT_TRUE(rl.Acquire(a));
  auto waiter = std::async(std::launch::async, [&] { return rl.Acquire(b); });
  EXPECT_EQ(waiter.wait_for(30ms), std::future_status::timeout);
  rl.Interrupt(b);  // what a scheduler's Stop does
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(waiter.get());
  // An interrupt with nobody waiting ends the next Acquire at once, once.
  rl.Interrupt(b);
  EXPECT_FALSE(rl.Acquire(b));
  rl.Release(a, false);
  EXPECT_TRUE(rl.Acquire(b));
  rl.Release(b, false);
}

TEST(RateLimiterTest, WithdrawnGrantIsNotAnExecutionAndUnregisterFrees) {
  RateLimiter rl;
  const auto a = RegisterOne(rl, Inst("a", {{"R", false, 1}}));
  const auto b = RegisterOne(rl, Inst("b", {{"R", false, 1}}));
  ASSERT_TRUE(rl.Acquire(a));
  rl.Withdraw(a);
  EXPECT_EQ(rl.ExecutionCount(a), 0u);
  ASSERT_TRUE(rl.Acquire(a));
  auto waiter = std::async(std::launch::async, [&] { return rl.Acquire(b); });
  EXPECT_EQ(waiter.wait_for(30ms), std::future_status::timeout);
  rl.Unregister(a);  // its copy is free again
  EXPECT_TRUE(waiter.get());
  rl.Release(b, false);
  EXPECT_FALSE(rl.Acquire(a));  // unknown now
}

// Sleeps in Execute and records the most executions seen at once across
// every instance sharing `running`, and the executing threads.
class OverlapInstance : public BackendInstance {
 public:
  OverlapInstance(std::atomic<int>* running, std::atomic<int>* peak, std::atomic<int>* on_caller,
                  std::thread::id caller)
      : running_(running), peak_(peak), on_caller_(on_caller), caller_(caller) {}
  void Execute(std::span<ExecutionItem> batch) override {
    if (std::this_thread::get_id() == caller_) ++*on_caller_;
    const int now = ++*running_;
    int seen = peak_->load();
    while (now > seen && !peak_->compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --*running_;
    for (auto& item : batch) {
      const InferInput& in = item.request->inputs[0];
      auto& o = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(o.buffer.data(), in.data.data, in.data.byte_size);
    }
  }

 private:
  std::atomic<int>* running_;
  std::atomic<int>* peak_;
  std::atomic<int>* on_caller_;
  std::thread::id caller_;
};

TEST(RateLimiterSchedulerTest, TwoModelsSharingOneCopyNeverOverlapAndNeverRunInline) {
  auto rl = std::make_shared<RateLimiter>();
  std::atomic<int> running{0}, peak{0}, on_caller{0};
  ModelStats stats_a, stats_b;
  auto make = [&](const std::string& name, ModelStats* stats) {
    std::vector<std::unique_ptr<BackendInstance>> inst;
    std::vector<RateLimitedInstance> specs;
    for (int i = 0; i < 2; ++i) {
      inst.push_back(std::make_unique<OverlapInstance>(&running, &peak, &on_caller,
                                                       std::this_thread::get_id()));
      specs.push_back(Inst(name, {{"R", false, 1}}));
    }
    auto ids = rl->Register(specs);
    EXPECT_TRUE(ids.ok());
    SchedulerConfig config;  // kNone: inline execution would apply
    return std::make_unique<DynamicBatchScheduler>(ModelIdentity{name, 1}, config, std::move(inst),
                                                   stats, RealClock::Get(),
                                                   RateLimitRegistration(rl, *ids));
  };
  auto a = make("a", &stats_a);
  auto b = make("b", &stats_b);
  testing::Results results;
  constexpr int kEach = 40;
  for (int i = 0; i < kEach; ++i) {
    a->Enqueue(testing::Request("a" + std::to_string(i), i, results));
    b->Enqueue(testing::Request("b" + std::to_string(i), i, results));
  }
  ASSERT_TRUE(results.WaitFor(2 * kEach));
  for (auto& [id, s] : results.status) EXPECT_TRUE(s.ok()) << id << ": " << s.message();
  EXPECT_EQ(peak.load(), 1);
  EXPECT_EQ(on_caller.load(), 0);
  a->Stop();
  b->Stop();
  EXPECT_TRUE(rl->Capacities(0).empty());  // unregistered at Stop
}

// Two sequences, pinned to the two instances of a sequence model, whose
// instances share one copy: their executions never overlap.
TEST(RateLimiterSchedulerTest, SequenceInstancesSharingOneCopyNeverOverlap) {
  auto rl = std::make_shared<RateLimiter>();
  std::atomic<int> running{0}, peak{0}, on_caller{0};
  std::vector<std::unique_ptr<BackendInstance>> inst;
  for (int i = 0; i < 2; ++i) {
    inst.push_back(
        std::make_unique<OverlapInstance>(&running, &peak, &on_caller, std::this_thread::get_id()));
  }
  auto ids = rl->Register({Inst("s", {{"R", false, 1}}), Inst("s", {{"R", false, 1}})});
  ASSERT_TRUE(ids.ok());
  SchedulerConfig config;
  config.kind = SchedulerConfig::Kind::kSequence;
  ModelStats stats;
  SequenceScheduler s(ModelIdentity{"s", 1}, config, std::move(inst), &stats, RealClock::Get(),
                      RateLimitRegistration(rl, *ids));
  testing::Results results;
  constexpr int kEach = 20;
  for (int i = 0; i < kEach; ++i) {
    for (uint64_t seq : {uint64_t{1}, uint64_t{2}}) {
      auto p = testing::Request(std::to_string(seq) + "_" + std::to_string(i), i, results);
      p->request->correlation_id = seq;
      p->request->sequence_start = i == 0;
      s.Enqueue(std::move(p));
    }
  }
  ASSERT_TRUE(results.WaitFor(2 * kEach));
  for (auto& [id, st] : results.status) EXPECT_TRUE(st.ok()) << id << ": " << st.message();
  EXPECT_EQ(peak.load(), 1);
  s.Stop();
  EXPECT_TRUE(rl->Capacities(0).empty());
}

TEST(RateLimiterSchedulerTest, StopReturnsWhileAnotherInstanceHoldsTheResource) {
  auto rl = std::make_shared<RateLimiter>();
  const auto holder = RegisterOne(*rl, Inst("holder", {{"R", false, 1}}));
  std::atomic<int> running{0}, peak{0}, on_caller{0};
  std::vector<std::unique_ptr<BackendInstance>> inst;
  inst.push_back(
      std::make_unique<OverlapInstance>(&running, &peak, &on_caller, std::this_thread::get_id()));
  auto ids = rl->Register({Inst("m", {{"R", false, 1}})});
  ASSERT_TRUE(ids.ok());
  ModelStats stats;
  auto s = std::make_unique<DynamicBatchScheduler>(ModelIdentity{"m", 1}, SchedulerConfig{},
                                                   std::move(inst), &stats, RealClock::Get(),
                                                   RateLimitRegistration(rl, *ids));
  ASSERT_TRUE(rl->Acquire(holder));
  auto stopped = std::async(std::launch::async, [&] { s->Stop(); });
  EXPECT_EQ(stopped.wait_for(5s), std::future_status::ready);
  rl->Release(holder, false);
}

}  // namespace
}  // namespace inferd
