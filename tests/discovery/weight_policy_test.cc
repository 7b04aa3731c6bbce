// The weight policy is pure: each row is hosts' smoothed loads -> weights.
#include "discovery/weight_policy.h"

#include <gtest/gtest.h>

namespace inferd::discovery {
namespace {

TEST(Smooth, FirstSampleIsTakenAsIsAndUnknownSamplesChangeNothing) {
  EXPECT_DOUBLE_EQ(Smooth(-1, 40, 0.5), 40);
  EXPECT_DOUBLE_EQ(Smooth(40, -1, 0.5), 40);
  EXPECT_DOUBLE_EQ(Smooth(40, 80, 0.5), 60);
  EXPECT_DOUBLE_EQ(Smooth(40, 80, 1.0), 80);
}

struct Row {
  const char* what;
  std::vector<HostLoad> hosts;
  std::vector<uint32_t> weights;
};

TEST(ComputeWeights, Table) {
  const WeightOptions o;  // floor 2000 us, 100 us per request in flight, 15 % hysteresis
  const std::vector<Row> rows = {
      {"no hosts", {}, {}},
      {"unknown load is no load", {{-1, -1, 0}, {-1, -1, 0}}, {100, 100}},
      {"an idle fleet is balanced", {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, {100, 100, 100}},
      {"noise below the floor barely matters", {{0, 0, 0}, {300, 0, 0}}, {100, 90}},
      {"weights come in tenths", {{0, 0, 0}, {1000, 0, 0}, {2500, 0, 0}}, {100, 70, 40}},
      {"twice the expected wait, about half the weight", {{0, 0, 0}, {2000, 0, 0}}, {100, 50}},
      {"the least loaded host sets the scale", {{2000, 0, 0}, {6000, 0, 0}}, {100, 50}},
      {"in-flight requests count as wait", {{0, 0, 0}, {0, 20, 0}}, {100, 50}},
      {"a host that is far behind keeps the minimum", {{0, 0, 0}, {1e9, 0, 0}}, {100, 10}},
      {"a small change keeps the previous weight", {{0, 0, 100}, {2000, 0, 55}}, {100, 55}},
      {"a large change replaces it", {{0, 0, 100}, {2000, 0, 80}}, {100, 50}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ComputeWeights(row.hosts, o), row.weights) << row.what;
  }
}

TEST(ComputeWeights, StayWithinBoundsForAnyLoad) {
  const WeightOptions o;
  std::vector<HostLoad> hosts;
  for (double q : {0.0, 1.0, 1e3, 1e5, 1e7, 1e12}) hosts.push_back({q, q / 1e3, 0});
  for (uint32_t w : ComputeWeights(hosts, o)) {
    EXPECT_GE(w, kMinWeight);
    EXPECT_LE(w, kMaxWeight);
  }
}

}  // namespace
}  // namespace inferd::discovery
