// The status page's windowed figures (src/status/stats_window.h) against
// what Prometheus 2.42's histogram_quantile and the recording rules give
// on the same buckets (deploy/prometheus/inferd.rules.test.yml holds the
// worked example's promtool test; docs/status_page.md the definitions).
#include "status/stats_window.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

namespace inferd::status {
namespace {

// A histogram in the unit the statistics keep (ns), from per-bucket counts.
HistogramSnapshot Hist(std::vector<uint64_t> bounds_ns, std::vector<uint64_t> counts) {
  HistogramSnapshot h;
  h.bounds = std::move(bounds_ns);
  h.counts = std::move(counts);
  for (size_t i = 0; i < h.bounds.size(); ++i) h.sum += h.counts[i] * h.bounds[i];
  return h;
}

constexpr uint64_t kMs = 1000000;  // ns

// The rules' worked example: per second, 40 <= 0.25 s, 100 <= 0.5 s,
// 196 <= 1 s, 200 in all. promtool gives p50 0.5, p95 0.96875, p99 1.
TEST(HistogramQuantile, RulesWorkedExample) {
  const std::vector<double> bounds = {0.25, 0.5, 1};
  const std::vector<double> cumulative = {40, 100, 196, 200};
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.5, bounds, cumulative), 0.5);
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.95, bounds, cumulative), 0.96875);
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.99, bounds, cumulative), 1.0);
}

// Values worked by hand with histogram_quantile's steps: the first bucket
// starts at 0, interpolation is linear within a bucket, a rank beyond the
// last finite bound answers that bound.
TEST(HistogramQuantile, InterpolatesLinearlyFromZero) {
  const std::vector<double> bounds = {0.1, 0.2, 0.4};
  // 10 <= 0.1, 30 <= 0.2, 40 <= 0.4, 40 in all.
  const std::vector<double> c = {10, 30, 40, 40};
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.125, bounds, c), 0.05);  // rank 5 of 10 in [0, 0.1]
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.5, bounds, c), 0.15);    // rank 20: 10 of 20 in (0.1, 0.2]
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.99, bounds, c), 0.2 + 0.2 * (39.6 - 30) / 10);
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.25, bounds, c), 0.1);  // rank 10: the top of bucket 0
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0, bounds, c), 0.0);
  EXPECT_DOUBLE_EQ(*HistogramQuantile(1, bounds, c), 0.4);
}

TEST(HistogramQuantile, RankInTheInfBucketAnswersTheHighestFiniteBound) {
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.5, {0.1, 0.2}, {1, 2, 10}), 0.2);
}

TEST(HistogramQuantile, NoValueWithoutObservationsOrFiniteBuckets) {
  EXPECT_FALSE(HistogramQuantile(0.5, {0.1, 0.2}, {0, 0, 0}));
  EXPECT_FALSE(HistogramQuantile(0.5, {}, {5}));
  EXPECT_FALSE(HistogramQuantile(0.5, {0.1}, {1}));  // sizes disagree
  EXPECT_FALSE(HistogramQuantile(1.5, {0.1}, {1, 1}));
  EXPECT_FALSE(HistogramQuantile(std::numeric_limits<double>::quiet_NaN(), {0.1}, {1, 1}));
}

// ensureMonotonic: a cumulative count below its predecessor (a snapshot
// taken mid-update) is raised to it before the search.
TEST(HistogramQuantile, CountsMadeMonotonic) {
  // As given, bucket 1 has 9 < 10: treated as 10, so rank 10 is bucket 0's top.
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.5, {1, 2, 3}, {10, 9, 20, 20}), 1.0);
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.75, {1, 2, 3}, {10, 9, 20, 20}), 2.5);
}

// The same computation by Prometheus itself: random bucket increments over
// the default latency buckets, scraped every 15 s from the window's start
// to its end (so rate() extrapolates nothing: every bucket's rate is its
// delta / 60), evaluated by promtool's rule tests; each of our quantiles
// must match histogram_quantile's to 1e-9 relative (the float operations
// differ: Prometheus divides the rates, we the deltas). Skipped without
// promtool (Debian's prometheus package).
TEST(HistogramQuantile, AgreesWithPromtool) {
  const char* promtool = "/usr/bin/promtool";
  if (access(promtool, X_OK) != 0) GTEST_SKIP() << promtool << " is not installed";
  const std::vector<double> bounds_s = StatsHistogramOptions::DefaultLatencyBuckets();
  std::vector<uint64_t> bounds_ns;
  for (double b : bounds_s) bounds_ns.push_back(static_cast<uint64_t>(std::llround(b * 1e9)));
  std::mt19937_64 rng(26);
  std::ostringstream series, tests;
  auto num = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    return std::string(buf);
  };
  int checked = 0;
  for (int scenario = 0; scenario < 25; ++scenario) {
    // Per-bucket (non-cumulative) counts at the start and added per scrape.
    HistogramSnapshot start, end;
    start.bounds = end.bounds = bounds_ns;
    std::uniform_int_distribution<uint64_t> base(0, 100000), step(0, 40);
    std::uniform_int_distribution<int> sparse(0, 3);
    uint64_t cum_start = 0, cum_step = 0;
    for (size_t i = 0; i <= bounds_ns.size(); ++i) {
      const uint64_t a = base(rng), b = sparse(rng) == 0 ? step(rng) : 0;
      start.counts.push_back(a);
      end.counts.push_back(a + 4 * b);
      cum_start += a;
      cum_step += b;
      const std::string le = i < bounds_ns.size() ? num(bounds_s[i]) : "+Inf";
      series << "      - series: 'h_bucket{s=\"" << scenario << "\", le=\"" << le << "\"}'\n"
             << "        values: '" << cum_start << "+" << cum_step << "x4'\n";
    }
    for (double q : {0.5, 0.9, 0.99}) {
      const auto ours = DeltaQuantile(q, start, end, 1e9);
      if (!ours) continue;  // no observation in the window
      ++checked;
      tests << "      - expr: 'abs(histogram_quantile(" << q << ", sum by (le) (rate(h_bucket{s=\""
            << scenario << "\"}[1m]))) - " << num(*ours) << ") <= bool " << num(1e-9 * *ours)
            << "'\n        eval_time: 1m\n        exp_samples:\n          - labels: '{}'\n"
            << "            value: 1\n";
    }
  }
  ASSERT_GT(checked, 50);
  const std::string dir = testing::TempDir();
  const std::string file = dir + "/stats_window_promtool.yml", log = file + ".log";
  std::ofstream(file) << "rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 15s\n"
                      << "    input_series:\n"
                      << series.str() << "    promql_expr_test:\n"
                      << tests.str();
  const std::string cmd = std::string(promtool) + " test rules " + file + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream out;
  out << in.rdbuf();
  EXPECT_EQ(rc, 0) << out.str();
  std::remove(file.c_str());
  std::remove(log.c_str());
}

TEST(DeltaQuantile, UsesTheDeltasOfEachBucketInSeconds) {
  const std::vector<uint64_t> bounds = {250 * kMs, 500 * kMs, 1000 * kMs};
  // Before: 5, 5, 5, 0; after: 45, 65, 101, 4. Deltas 40, 60, 96, 4:
  // cumulative 40, 100, 196, 200: the worked example again.
  const HistogramSnapshot before = Hist(bounds, {5, 5, 5, 0});
  const HistogramSnapshot after = Hist(bounds, {45, 65, 101, 4});
  EXPECT_DOUBLE_EQ(*DeltaQuantile(0.5, before, after, 1e9), 0.5);
  EXPECT_DOUBLE_EQ(*DeltaQuantile(0.95, before, after, 1e9), 0.96875);
  EXPECT_DOUBLE_EQ(*DeltaQuantile(0.99, before, after, 1e9), 1.0);
  EXPECT_FALSE(DeltaQuantile(0.5, after, after, 1e9));                // nothing in between
  EXPECT_FALSE(DeltaQuantile(0.5, Hist({kMs}, {0, 0}), after, 1e9));  // other bounds
}

VersionCounters Counters(uint64_t n, const HistogramSnapshot& request) {
  VersionCounters c;
  c.inferences = 2 * n;  // batch-weighted: two rows per request
  c.successes = n;
  c.executions = n / 2;
  c.queue_us = 10 * n;
  c.request = request;
  c.queue = request;
  c.compute_infer = request;
  c.batch_size = Hist({1, 2, 4}, {0, 0, 0, 0});
  c.batch_size.counts[1] = n / 2;
  c.batch_size.sum = n;
  return c;
}

TEST(Between, RatesRatiosAndQuantiles) {
  const std::vector<uint64_t> b = {250 * kMs, 500 * kMs, 1000 * kMs};
  const VersionCounters older = Counters(100, Hist(b, {100, 0, 0, 0}));
  const VersionCounters newer = Counters(300, Hist(b, {140, 60, 96, 4}));
  const WindowFigures f = Between(older, 10, newer, 20);
  EXPECT_DOUBLE_EQ(f.seconds, 10);
  EXPECT_DOUBLE_EQ(f.inferences_per_s, 40);
  EXPECT_DOUBLE_EQ(f.requests_per_s, 20);
  EXPECT_DOUBLE_EQ(f.executions_per_s, 10);
  EXPECT_DOUBLE_EQ(f.failures_per_s, 0);
  EXPECT_DOUBLE_EQ(*f.queue_us_per_request, 10);
  EXPECT_DOUBLE_EQ(*f.batch_size_mean, 2);
  EXPECT_DOUBLE_EQ(*f.p50_s, 0.5);
  EXPECT_DOUBLE_EQ(*f.p99_s, 1.0);
}

TEST(Between, NoRequestsMeansZeroRatesAndNoQuantiles) {
  const VersionCounters c = Counters(100, Hist({kMs}, {100, 0}));
  const WindowFigures f = Between(c, 0, c, 60);
  EXPECT_DOUBLE_EQ(f.inferences_per_s, 0);
  EXPECT_DOUBLE_EQ(f.requests_per_s, 0);
  EXPECT_FALSE(f.p50_s);
  EXPECT_FALSE(f.p99_s);
  EXPECT_FALSE(f.queue_us_per_request);
  EXPECT_FALSE(f.batch_size_mean);
}

const SeriesKey kSimple{"simple", 1};

// `n` requests so far, all in the first bucket.
std::map<SeriesKey, VersionCounters> Total(uint64_t n) {
  return {{kSimple, Counters(n, Hist({kMs, 2 * kMs}, {n, 0, 0}))}};
}

// Requests at `rate` per second from t = 0.
std::map<SeriesKey, VersionCounters> At(int t, uint64_t rate) {
  return Total(static_cast<uint64_t>(t) * rate);
}

TEST(StatsWindow, NoFigureFromOneSnapshot) {
  StatsWindow w;
  w.Add(0, At(0, 10));
  auto out = w.Compute();
  ASSERT_EQ(out.count(kSimple), 1u);
  EXPECT_FALSE(out[kSimple].window);
  EXPECT_TRUE(out[kSimple].chart.empty());
}

TEST(StatsWindow, WindowIsTheLastSixtySecondsInclusive) {
  StatsWindow w(60, 5);
  // 10 requests/s until t = 70, then 20/s.
  for (int t = 0; t <= 100; ++t) w.Add(t, Total(t < 70 ? 10 * t : 700 + 20 * (t - 70)));
  auto out = w.Compute();
  ASSERT_TRUE(out[kSimple].window);
  const WindowFigures& f = *out[kSimple].window;
  // From t = 40 (exactly 60 s old) to t = 100: 30 s at 10/s, 30 s at 20/s.
  EXPECT_DOUBLE_EQ(f.seconds, 60);
  EXPECT_DOUBLE_EQ(f.requests_per_s, 15);
  EXPECT_DOUBLE_EQ(f.inferences_per_s, 30);
  EXPECT_DOUBLE_EQ(*f.p50_s, 0.0005);  // the first bucket, [0, 1 ms]: half way
  EXPECT_EQ(w.size(), 61u);            // older snapshots were dropped
  // The chart: twelve 5 s steps, oldest first, ending now.
  const auto& chart = out[kSimple].chart;
  ASSERT_EQ(chart.size(), 12u);
  EXPECT_DOUBLE_EQ(chart.front().age_s, 55);
  EXPECT_DOUBLE_EQ(chart.back().age_s, 0);
  EXPECT_DOUBLE_EQ(chart.front().inferences_per_s, 20);  // 40..45 s at 10 requests/s
  EXPECT_DOUBLE_EQ(chart.back().inferences_per_s, 40);
}

TEST(StatsWindow, ResetStartsTheWindowAtTheReset) {
  StatsWindow w(60, 5);
  for (int t = 0; t <= 30; ++t) w.Add(t, At(t, 10));  // up to 300 requests
  // Reloaded at t = 31: counters restart from 0, then 5 per second.
  for (int t = 31; t <= 40; ++t) w.Add(t, At(t - 31, 5));
  auto out = w.Compute();
  ASSERT_TRUE(out[kSimple].window);
  EXPECT_DOUBLE_EQ(out[kSimple].window->seconds, 9);  // from t = 31
  EXPECT_DOUBLE_EQ(out[kSimple].window->requests_per_s, 5);
  // The chart keeps the steps before the reset and after it, and leaves
  // out the one that spans it (30 to 35 s, age 5).
  std::vector<double> ages;
  for (const ChartPoint& p : out[kSimple].chart) ages.push_back(p.age_s);
  EXPECT_EQ(ages, (std::vector<double>{35, 30, 25, 20, 15, 10, 0}));
}

TEST(StatsWindow, VersionAbsentFromASnapshotStartsItsWindowAfterIt) {
  StatsWindow w(60, 5);
  w.Add(0, At(0, 10));
  w.Add(1, {});  // unloaded
  w.Add(2, At(2, 10));
  w.Add(3, At(3, 10));
  auto out = w.Compute();
  ASSERT_TRUE(out[kSimple].window);
  EXPECT_DOUBLE_EQ(out[kSimple].window->seconds, 1);
}

TEST(StatsWindow, OnlyVersionsInTheNewestSnapshot) {
  StatsWindow w;
  w.Add(0, At(0, 10));
  w.Add(1, {});
  EXPECT_TRUE(w.Compute().empty());
}

TEST(StatsWindow, IgnoresSnapshotsOutOfOrder) {
  StatsWindow w;
  w.Add(5, At(5, 10));
  w.Add(4, At(4, 10));
  EXPECT_EQ(w.size(), 1u);
}

TEST(IsReset, AnyCounterOrBucketDown) {
  const VersionCounters a = Counters(10, Hist({kMs}, {10, 0}));
  EXPECT_FALSE(IsReset(a, a));
  VersionCounters b = a;
  b.request.counts[0] = 9;
  EXPECT_TRUE(IsReset(a, b));
  b = a;
  b.executions = 0;
  EXPECT_TRUE(IsReset(a, b));
  b = a;
  b.request = Hist({2 * kMs}, {10, 0});  // other bounds: another configuration
  EXPECT_TRUE(IsReset(a, b));
}

}  // namespace
}  // namespace inferd::status
