#include "scheduler/adaptive_batching.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "scheduler/model_stats.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;
using Curve = std::function<double(int64_t rows)>;  // ns per execution
using TP = std::chrono::steady_clock::time_point;

constexpr double kT1 = 10e6;  // 10 ms for one row

// Runs `steps` decisions under heavy load (`queued` rows always waiting),
// executing each target on `curve` (times jittered +-`noise`, one in 20
// five times slower), and returns the last decision's best size.
int64_t Converge(ExecTimeEstimate& est, const Curve& curve, int64_t max_batch, int64_t queued,
                 int steps, const AdaptiveParams& params = {}, double noise = 0.04) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  AdaptiveInput in;
  in.max_batch_size = max_batch;
  in.queued_rows = queued;
  in.population = queued;
  in.max_delay = 5ms;
  AdaptiveDecision d;
  for (int i = 0; i < steps; ++i) {
    d = DecideAdaptive(est, in, params);
    EXPECT_TRUE(d.take_now) << "step " << i;
    EXPECT_LE(d.target, std::min(max_batch, queued));
    const int64_t rows = std::min(d.target, queued);
    double t = curve(rows) * jitter(rng);
    if (i % 20 == 19) t *= 5;
    est.Record(rows, static_cast<int64_t>(t));
  }
  return DecideAdaptive(est, in, params).best;
}

struct CurveCase {
  const char* what;
  Curve curve;
  int64_t max_batch, queued, expected_best;
  double noise = 0.04;
};

// CPU-like: a batch costs 10% more than its rows run one at a time.
double Cpu(int64_t b) { return kT1 * (b == 1 ? 1.0 : 1.1 * static_cast<double>(b)); }

TEST(AdaptiveBatchingTest, ConvergesOnMeasuredCurves) {
  const std::vector<CurveCase> cases = {
      {"CPU-like: b * t1 * 1.1", Cpu, 32, 64, 1},
      {"CPU-like, +-20% noise", Cpu, 32, 64, 1, 0.2},
      {"GPU-like, +-20% noise", [](int64_t b) { return kT1 * std::pow(b, 0.3); }, 32, 64, 32, 0.2},
      {"CPU-like, batch of 8 slower per row (resnet18 here)",
       [](int64_t b) { return kT1 * (b == 1 ? 1.0 : 1.19 * static_cast<double>(b)); }, 32, 16, 1},
      {"GPU-like: t1 * b^0.3", [](int64_t b) { return kT1 * std::pow(b, 0.3); }, 32, 64, 32},
      {"GPU-like, queue holds 16: best within what comes",
       [](int64_t b) { return kT1 * std::pow(b, 0.3); }, 64, 16, 16},
      {"GPU-like, max 24 (not a power of two)", [](int64_t b) { return kT1 * std::pow(b, 0.5); },
       24, 64, 24},
      {"saturates at 8: flat throughput above, the smallest wins",
       [](int64_t b) { return kT1 * std::max<double>(1.0, static_cast<double>(b) / 8); }, 64, 64, 8,
       0},
      {"constant time (today's delay model)", [](int64_t) { return kT1; }, 16, 64, 16},
  };
  for (const auto& c : cases) {
    ExecTimeEstimate est(c.max_batch);
    EXPECT_EQ(Converge(est, c.curve, c.max_batch, c.queued, 300, {}, c.noise), c.expected_best)
        << c.what;
  }
}

TEST(AdaptiveBatchingTest, FollowsAChangedCurve) {
  AdaptiveParams params;
  params.stale_after = 20;
  ExecTimeEstimate est(32);
  const Curve cpu = Cpu;
  const Curve gpu = [](int64_t b) { return kT1 * std::pow(b, 0.3); };
  EXPECT_EQ(Converge(est, cpu, 32, 64, 200, params), 1);
  EXPECT_EQ(Converge(est, gpu, 32, 64, 600, params), 32);
  EXPECT_EQ(Converge(est, cpu, 32, 64, 600, params), 1);
}

TEST(AdaptiveBatchingTest, ExploresOnlyWithRowsQueuedAndWhenStale) {
  ExecTimeEstimate est;
  for (int i = 0; i < 3; ++i) est.Record(1, 10'000'000);
  for (int i = 0; i < 3; ++i) est.Record(2, 22'000'000);
  AdaptiveParams params;
  params.stale_after = 10;
  AdaptiveInput in;
  in.max_batch_size = 8;
  in.queued_rows = 4;
  AdaptiveDecision d = DecideAdaptive(est, in, params);
  EXPECT_EQ(d.best, 1);
  EXPECT_EQ(d.target, 1);  // 2 measured recently; 4 is not a neighbour of 1
  for (int i = 0; i < 10; ++i) est.Record(1, 10'000'000);
  d = DecideAdaptive(est, in, params);
  EXPECT_EQ(d.target, 2);  // 2 is stale: measured again
  in.queued_rows = 1;
  d = DecideAdaptive(est, in, params);
  EXPECT_EQ(d.target, 1);  // but never by waiting for rows
  EXPECT_TRUE(d.take_now);
}

TEST(AdaptiveBatchingTest, NothingMeasuredTakesOneRowNow) {
  ExecTimeEstimate est;
  AdaptiveInput in;
  in.max_batch_size = 32;
  in.queued_rows = 20;
  in.max_delay = 5ms;
  in.row_gap = 100us;
  const AdaptiveDecision d = DecideAdaptive(est, in);
  EXPECT_EQ(d.best, 1);
  EXPECT_EQ(d.target, 1);
  EXPECT_TRUE(d.take_now);
}

// The dispatch rules with a GPU-like estimate whose best size is 16.
struct DispatchCase {
  const char* what;
  int64_t queued;
  std::chrono::nanoseconds held, max_delay, since_last, gap;
  bool take_now;
  std::chrono::nanoseconds wait;  // when waiting
  std::chrono::nanoseconds turnaround = 0ns;
};

TEST(AdaptiveBatchingTest, DispatchTable) {
  ExecTimeEstimate gpu;
  for (int64_t b = 1; b <= 16; b *= 2) {
    for (int i = 0; i < 3; ++i) gpu.Record(b, static_cast<int64_t>(kT1 * std::pow(b, 0.3)));
  }
  const std::vector<DispatchCase> cases = {
      {"target reached", 16, 0us, 5ms, 0us, 100us, true, 0us},
      {"no bound: only what is queued", 3, 0us, 0us, 0us, 100us, true, 0us},
      {"bound reached", 3, 5ms, 5ms, 0us, 100us, true, 0us},
      {"arrival rate unknown", 3, 0us, 5ms, 0us, 0us, true, 0us},
      {"arrivals stopped (3 gaps)", 3, 1ms, 5ms, 300us, 100us, true, 0us},
      {"rows coming: wait until the next is overdue", 3, 0us, 5ms, 50us, 100us, false, 250us},
      {"rows coming, bound near: wait up to the bound", 3, 4900us, 5ms, 0us, 100us, false, 100us},
      {"rows too slow to pay for the wait", 3, 0us, 5ms, 0us, 4ms, true, 0us},
      {"clients come back 1 ms after a completion: wait 2 of those", 3, 0us, 5ms, 0us, 0us, false,
       2ms, 1ms},
      {"the gap, or 2 turnarounds, whichever is longer", 3, 0us, 5ms, 500us, 100us, false, 1500us,
       1ms},
      {"2 turnarounds passed", 3, 0us, 5ms, 2ms, 100us, true, 0us, 1ms},
  };
  for (const auto& c : cases) {
    AdaptiveInput in;
    in.max_batch_size = 16;
    in.queued_rows = c.queued;
    in.held = c.held;
    in.max_delay = c.max_delay;
    in.since_last_event = c.since_last;
    in.row_gap = c.gap;
    in.turnaround = c.turnaround;
    const AdaptiveDecision d = DecideAdaptive(gpu, in);
    EXPECT_EQ(d.best, 16) << c.what;
    EXPECT_EQ(d.take_now, c.take_now) << c.what;
    if (!c.take_now) {
      EXPECT_EQ(d.wait, c.wait) << c.what;
    }
  }
}

// Closed-loop clients split into two groups of 8 (one executes while the
// other queues): only waiting for the group that just finished measures 16.
TEST(AdaptiveBatchingTest, WaitsForTheRecentPopulationToExploreNowAndThen) {
  ExecTimeEstimate est;
  for (int64_t b = 1; b <= 8; b *= 2) {
    for (int i = 0; i < 3; ++i) est.Record(b, static_cast<int64_t>(kT1 * std::pow(b, 0.3)));
  }
  AdaptiveInput in;
  in.max_batch_size = 32;
  in.queued_rows = 8;
  in.population = 16;
  in.max_delay = 5ms;
  in.row_gap = 50us;
  in.turnaround = 1ms;
  AdaptiveDecision d = DecideAdaptive(est, in);
  EXPECT_EQ(d.best, 8);
  EXPECT_EQ(d.target, 16);
  EXPECT_TRUE(d.explore_wait);
  EXPECT_FALSE(d.take_now);
  EXPECT_EQ(d.wait, 2ms);
  in.may_wait_to_explore = false;  // waited to explore recently
  d = DecideAdaptive(est, in);
  EXPECT_EQ(d.target, 8);
  EXPECT_TRUE(d.take_now);
  in.may_wait_to_explore = true;
  in.population = 8;  // nobody else to wait for
  EXPECT_TRUE(DecideAdaptive(est, in).take_now);
  in.population = 16;
  in.held = 5ms;  // the bound
  d = DecideAdaptive(est, in);
  EXPECT_TRUE(d.take_now);
  EXPECT_FALSE(d.explore_wait);
}

TEST(AdaptiveBatchingTest, CpuLikeNeverWaits) {
  ExecTimeEstimate cpu;
  for (int i = 0; i < 3; ++i) {
    cpu.Record(1, 10'000'000);
    cpu.Record(2, 22'000'000);
  }
  AdaptiveInput in;
  in.max_batch_size = 16;
  in.queued_rows = 1;
  in.max_delay = 5ms;
  in.row_gap = 10us;
  const AdaptiveDecision d = DecideAdaptive(cpu, in);
  EXPECT_EQ(d.best, 1);
  EXPECT_TRUE(d.take_now);
}

TEST(AdaptiveBatchingTest, EstimateIsRobustAndInterpolated) {
  ExecTimeEstimate est;
  for (int64_t ns : {100, 102, 98, 5000, 101}) est.Record(4, ns);  // one outlier
  for (int i = 0; i < 3; ++i) est.Record(1, 40);
  EXPECT_EQ(est.Bucket(1), 0u);
  EXPECT_EQ(est.Bucket(5), 2u);
  EXPECT_EQ(est.Bucket(8), 3u);
  const ExecTimeEstimate max24(24);
  EXPECT_EQ(max24.Bucket(23), 4u);
  EXPECT_EQ(max24.Bucket(24), 5u);  // the maximum apart from 16..23
  EXPECT_EQ(ExecTimeEstimate(32).Bucket(32), 5u);
  const auto points = est.Points();
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].rows, 1);
  EXPECT_EQ(points[1].rows, 4);
  EXPECT_DOUBLE_EQ(points[1].ns, 101);
  EXPECT_DOUBLE_EQ(EstimateNs(points, 1), 40);
  EXPECT_DOUBLE_EQ(EstimateNs(points, 2.5), 40 + 0.5 * 61);
  EXPECT_DOUBLE_EQ(EstimateNs(points, 8), 202);  // proportional above the last
  EXPECT_DOUBLE_EQ(EstimateNs({}, 8), 0);
  // The window keeps the last five: the level moves with the load.
  for (int i = 0; i < 3; ++i) est.Record(4, 300);
  EXPECT_DOUBLE_EQ(est.BucketOf(4).ns, 300);
}

TEST(AdaptiveBatchingTest, ArrivalGapCountsOnlyQueuedArrivals) {
  ArrivalGap g;
  const std::chrono::steady_clock::time_point t0{std::chrono::seconds(10)};
  g.OnArrival(t0, 1, true);
  EXPECT_EQ(g.gap().count(), 0);
  g.OnArrival(t0 + 20ms, 1, true);  // a new burst: the idle time is no gap
  EXPECT_EQ(g.gap().count(), 0);
  g.OnArrival(t0 + 20ms + 100us, 2, false);
  EXPECT_EQ(g.gap(), 50us);  // per row
  EXPECT_EQ(g.last(), t0 + 20ms + 100us);
}

TEST(AdaptiveBatchingTest, BatcherNarrowsThePolicyAndPublishesTheTarget) {
  ModelStats stats;
  AdaptiveBatcher batcher(1, 16, &stats);
  EXPECT_EQ(stats.Snapshot().batch_target, 1);
  const TP t0{std::chrono::seconds(10)};
  for (int64_t b = 1; b <= 16; b *= 2) {
    for (int i = 0; i < 3; ++i) {
      batcher.Start(0, b);
      batcher.Record(0, b, std::chrono::nanoseconds(static_cast<int64_t>(kT1 * std::pow(b, 0.3))),
                     t0 - 150us);  // clients come back 150 us later
    }
  }
  std::vector<BatchCandidate> queue(20, BatchCandidate{"a", 1, t0});
  BatchPolicy policy{true, 16, {}, 5000us};
  batcher.Apply(0, queue, t0 + 1ms, policy);
  EXPECT_EQ(policy.max_batch_size, 16);
  EXPECT_EQ(policy.max_queue_delay.count(), 0);
  EXPECT_EQ(stats.Snapshot().batch_target, 16);
  EXPECT_EQ(DecideBatch(policy, queue, t0 + 1ms).take, 16u);
  // Three rows queued, rows arriving every 100 us: wait (DecideBatch's
  // wake-up is the head's arrival + the delay set).
  queue.resize(3);
  for (int i = 0; i < 3; ++i) batcher.OnArrival(t0 + i * 100us, 1, i == 0);
  policy = BatchPolicy{true, 16, {}, 5000us};
  batcher.Apply(0, queue, t0 + 250us, policy);
  const BatchDecision d = DecideBatch(policy, queue, t0 + 250us);
  EXPECT_EQ(d.take, 0u);
  EXPECT_EQ(d.wake_at, t0 + 500us);  // the next arrival overdue: 3 gaps after the last
}

}  // namespace
}  // namespace inferd
