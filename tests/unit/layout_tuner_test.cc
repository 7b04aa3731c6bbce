// LayoutTuner (scheduler/layout_tuner.h): table tests against a simulated
// closed loop of clients on N hardware threads, with synthetic execution
// time curves (Amdahl's law with parallel fraction p, noise, load changes).
#include "scheduler/layout_tuner.h"

#include <gtest/gtest.h>

#include <queue>
#include <random>

namespace inferd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Execution time of one request with `threads` threads: base * ((1-p) + p/t).
struct Curve {
  double base_ms = 40;
  double parallel = 0.9;
  double noise = 0;  // relative, uniform +-noise
  double Ms(int threads, std::mt19937& rng) const {
    std::uniform_real_distribution<double> u(-noise, noise);
    return base_ms * ((1 - parallel) + parallel / threads) * (1 + u(rng));
  }
};

// Drives `tuner` with `clients` closed-loop clients (no think time) from
// `start` for `duration`; returns the end time.
Clock::time_point Simulate(LayoutTuner& tuner, const Curve& curve, int clients,
                           Clock::time_point start, Clock::duration duration, uint32_t seed = 1) {
  struct Exec {
    Clock::time_point end;
    size_t instance;
    uint64_t generation;
    bool operator>(const Exec& o) const { return end > o.end; }
  };
  std::mt19937 rng(seed);
  std::priority_queue<Exec, std::vector<Exec>, std::greater<>> running;
  std::vector<bool> busy(64, false);
  Clock::time_point now = start;
  const auto stop = start + duration;
  while (now < stop) {
    // Free active instances take waiting requests.
    const Layout l = tuner.current();
    for (size_t i = 0; i < static_cast<size_t>(l.instances); ++i) {
      if (busy[i] || static_cast<int>(running.size()) >= clients) continue;
      busy[i] = true;
      const auto d = std::chrono::duration<double, std::milli>(curve.Ms(l.threads, rng));
      running.push(
          Exec{now + std::chrono::duration_cast<Clock::duration>(d), i, tuner.generation()});
    }
    const Exec e = running.top();
    running.pop();
    now = e.end;
    busy[e.instance] = false;
    tuner.Record(now, e.generation, 1, clients);
  }
  return now;
}

struct Case {
  const char* name;
  int threads;
  Curve curve;
  int clients;
  Layout want;
};

class LayoutTunerTable : public ::testing::TestWithParam<Case> {};

TEST_P(LayoutTunerTable, ConvergesToTheBestLayout) {
  const Case& c = GetParam();
  LayoutTuner tuner(c.threads);
  const auto end = Simulate(tuner, c.curve, c.clients, Clock::time_point{}, seconds(60));
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.decisions() >= 1, c.threads > 1);  // one thread: nothing to decide
  EXPECT_EQ(tuner.current(), c.want)
      << c.name << ": got " << tuner.current().instances << "x" << tuner.current().threads;
  (void)end;
}

INSTANTIATE_TEST_SUITE_P(
    Curves, LayoutTunerTable,
    ::testing::Values(
        // Concurrency 1: throughput = 1/latency, the most threads win.
        Case{"amdahl 0.9, 1 client", 4, Curve{40, 0.9}, 1, Layout{1, 4}},
        // Heavy load on a CPU: one thread per execution, all instances.
        Case{"amdahl 0.9, 8 clients", 4, Curve{40, 0.9}, 8, Layout{4, 1}},
        // Two clients: two instances of two threads beat both extremes.
        Case{"amdahl 0.9, 2 clients", 4, Curve{40, 0.9}, 2, Layout{2, 2}},
        // Nothing parallel: the most instances under load.
        Case{"serial, 8 clients", 4, Curve{40, 0.0}, 8, Layout{4, 1}},
        // Perfect scaling: every layout the same, the initial 1xN stays.
        Case{"perfect scaling, 8 clients", 4, Curve{40, 1.0}, 8, Layout{1, 4}},
        // Noise of +-15 % does not hide a 30 % difference.
        Case{"amdahl 0.9 noisy, 8 clients", 4, Curve{40, 0.9, 0.15}, 8, Layout{4, 1}},
        Case{"amdahl 0.9 noisy, 1 client", 2, Curve{20, 0.9, 0.15}, 1, Layout{1, 2}},
        // Fast executions (2 ms): the minimum count is reached at once, time decides.
        Case{"fast, 16 clients", 2, Curve{2, 0.5}, 16, Layout{2, 1}},
        // One hardware thread: nothing to choose.
        Case{"one thread", 1, Curve{40, 0.9}, 8, Layout{1, 1}}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return n;
    });

TEST(LayoutTuner, CandidatesAreTheDivisors) {
  const auto c = LayoutTuner::Candidates(12);
  const std::vector<Layout> want = {{1, 12}, {2, 6}, {3, 4}, {4, 3}, {6, 2}, {12, 1}};
  EXPECT_EQ(c, want);
  EXPECT_EQ(LayoutTuner::Candidates(0), (std::vector<Layout>{Layout{1, 1}}));
}

TEST(LayoutTuner, StartsWithOneInstanceOfEveryThread) {
  LayoutTuner tuner(8);
  EXPECT_EQ(tuner.current(), (Layout{1, 8}));
  EXPECT_FALSE(tuner.searching());
}

TEST(LayoutTuner, SearchesAgainWhenTheLoadChanges) {
  LayoutTuner tuner(4);
  auto t = Simulate(tuner, Curve{40, 0.9}, 8, Clock::time_point{}, seconds(60));
  ASSERT_EQ(tuner.current(), (Layout{4, 1}));
  const uint64_t decisions = tuner.decisions();
  t = Simulate(tuner, Curve{40, 0.9}, 1, t, seconds(60));
  EXPECT_GT(tuner.decisions(), decisions);
  EXPECT_EQ(tuner.current(), (Layout{1, 4}));
  // And back.
  Simulate(tuner, Curve{40, 0.9}, 8, t, seconds(60));
  EXPECT_EQ(tuner.current(), (Layout{4, 1}));
}

TEST(LayoutTuner, SteadyLoadKeepsTheDecisionUntilTheReevaluationPeriod) {
  LayoutTunerOptions o;
  o.reevaluate = seconds(100);
  LayoutTuner tuner(4, o);
  auto t = Simulate(tuner, Curve{40, 0.9}, 8, Clock::time_point{}, seconds(60));
  EXPECT_EQ(tuner.decisions(), 1u);
  t = Simulate(tuner, Curve{40, 0.9}, 8, t, seconds(30));
  EXPECT_EQ(tuner.decisions(), 1u);  // a small change of load is no reason
  Simulate(tuner, Curve{40, 0.9}, 8, t, seconds(120));
  EXPECT_GE(tuner.decisions(), 2u);
  EXPECT_EQ(tuner.current(), (Layout{4, 1}));
}

TEST(LayoutTuner, ExecutionsOfAnEarlierLayoutAreNotMeasured) {
  LayoutTunerOptions o;
  o.trial = seconds(1);
  o.min_executions = 2;
  LayoutTuner tuner(2, o);
  auto t = Clock::time_point{} + seconds(1);
  // Trial of 1x2: a window opens at the first completion, then 1 s of
  // completions every 100 ms.
  for (int i = 0; i <= 10; ++i) tuner.Record(t + milliseconds(100 * i), 0, 1, 1);
  ASSERT_TRUE(tuner.searching());
  ASSERT_EQ(tuner.current(), (Layout{2, 1}));  // the next trial
  const uint64_t g = tuner.generation();
  // Stale completions (generation 0) in huge numbers do not count.
  t += seconds(2);
  for (int i = 0; i < 1000; ++i) tuner.Record(t + milliseconds(i), g - 1, 1, 1);
  EXPECT_TRUE(tuner.searching());
  // 2x1 at 5 rows/s against 1x2 at 10 rows/s: back to 1x2.
  t += seconds(2);
  for (int i = 0; i <= 6; ++i) tuner.Record(t + milliseconds(200 * i), g, 1, 1);
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.current(), (Layout{1, 2}));
  EXPECT_NEAR(tuner.measured()[0], 10, 0.01);
  EXPECT_NEAR(tuner.measured()[1], 5, 0.01);
}

TEST(LayoutTuner, APauseRestartsTheTrialWindow) {
  LayoutTunerOptions o;
  o.trial = seconds(1);
  o.min_executions = 2;
  LayoutTuner tuner(2, o);
  const auto t = Clock::time_point{} + seconds(1);
  tuner.Record(t, 0, 1, 1);  // opens the window
  tuner.Record(t + milliseconds(100), 0, 1, 1);
  // 10 s of silence, then steady completions: the silence is not measured.
  for (int i = 0; i <= 10; ++i) tuner.Record(t + seconds(10) + milliseconds(100 * i), 0, 1, 1);
  EXPECT_NEAR(tuner.measured()[0], 10, 0.01);
}

}  // namespace
}  // namespace inferd
