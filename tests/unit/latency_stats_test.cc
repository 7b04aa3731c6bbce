#include "latency_stats.h"

#include <gtest/gtest.h>

namespace inferd::perf {
namespace {

TEST(LatencyStatsTest, NearestRankPercentiles) {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= 100; ++i) v.push_back(101 - i);  // unsorted on purpose
  WindowSummary s = Summarize(v, 2, 2.0, 4, 95);
  EXPECT_EQ(s.requests, 100u);
  EXPECT_EQ(s.errors, 2u);
  EXPECT_DOUBLE_EQ(s.throughput, 200.0);  // 100 requests x batch 4 / 2 s
  EXPECT_DOUBLE_EQ(s.p50_us, 50);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.pct_us, 95);
  EXPECT_DOUBLE_EQ(s.avg_us, 50.5);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
}

TEST(LatencyStatsTest, StabilityNeedsThreeAgreeingWindows) {
  auto w = [](double tput, double avg) {
    WindowSummary s;
    s.throughput = tput;
    s.avg_us = avg;
    s.pct_us = avg;
    return s;
  };
  std::vector<WindowSummary> ws = {w(100, 10), w(105, 10.5)};
  EXPECT_FALSE(IsStable(ws, 3, 0.1, false));
  ws.push_back(w(98, 10.2));
  EXPECT_TRUE(IsStable(ws, 3, 0.1, false));
  ws.push_back(w(150, 10));
  EXPECT_FALSE(IsStable(ws, 3, 0.1, false));
}

}  // namespace
}  // namespace inferd::perf
