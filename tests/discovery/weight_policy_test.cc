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
  // Floor 2000 us, 100 us per request in flight; the rows were written for a band of 2 x the
  // median, which shows the arithmetic with small numbers (the default band is wider).
  WeightOptions o;
  o.band = 2.0;
  const std::vector<Row> rows = {
      {"no hosts", {}, {}},
      {"unknown load is no load", {{-1, -1, 0}, {-1, -1, 0}}, {100, 100}},
      {"an idle fleet is balanced", {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, {100, 100, 100}},
      {"noise below the floor does not matter", {{0, 0, 0}, {1900, 0, 0}}, {100, 100}},
      // All the queue on the one host of two when the second joins: at 2 x the median
      // (the mean), inside the band, so the new host does not take every request.
      {"a joining host does not swing the load", {{550000, 0, 0}, {0, 0, 0}}, {100, 100}},
      {"a busy fleet with the usual spread",
       {{150000, 0, 0}, {90000, 0, 0}, {250000, 0, 0}},
       {100, 100, 100}},
      {"one slow host among busy equals",
       {{100000, 0, 0}, {100000, 0, 0}, {800000, 0, 0}},
       {100, 100, 30}},
      {"weights come in tenths",
       {{10000, 0, 0}, {10000, 0, 0}, {10000, 0, 0}, {45000, 0, 0}},
       {100, 100, 100, 50}},
      {"in-flight requests count as wait",
       {{10000, 0, 0}, {10000, 0, 0}, {10000, 200, 0}},
       {100, 100, 70}},
      {"a host that is far behind keeps the minimum",
       {{0, 0, 0}, {0, 0, 0}, {1e9, 0, 0}},
       {100, 100, 10}},
      {"a small change keeps the previous weight",
       {{100000, 0, 100}, {100000, 0, 100}, {800000, 0, 28}},
       {100, 100, 28}},
      {"a large change replaces it",
       {{100000, 0, 100}, {100000, 0, 100}, {800000, 0, 80}},
       {100, 100, 30}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ComputeWeights(row.hosts, o), row.weights) << row.what;
  }
}

TEST(ComputeWeights, TheDefaultBandLeavesClosedLoopDriftAlone) {
  // Queue times measured under round robin with 12 requests in flight on three equal hosts
  // (tests/cluster/test_discovery_cluster.py): a narrow band split them into two weights,
  // and gRPC then picks at random between localities, leaving hosts idle.
  const std::vector<HostLoad> drift = {{424000, 0, 0}, {109000, 0, 0}, {10000, 0, 0}};
  EXPECT_EQ(ComputeWeights(drift, WeightOptions{}), (std::vector<uint32_t>{100, 100, 100}));
  WeightOptions narrow;
  narrow.band = 2.0;
  EXPECT_LT(ComputeWeights(drift, narrow)[0], 100u);
  // A host far behind its equals is still corrected.
  const std::vector<HostLoad> slow = {{100000, 0, 0}, {100000, 0, 0}, {2000000, 0, 0}};
  EXPECT_EQ(ComputeWeights(slow, WeightOptions{}), (std::vector<uint32_t>{100, 100, 20}));
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
