// infer-perf --search's pure parts: the candidates, the concurrency plan and
// stop rule, the Pareto front and the winner, and the config edits.
#include "perf_search.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace inferd::perf {
namespace {

SearchPoint P(size_t cand, int c, double tput, double lat_us, bool ok = true) {
  return SearchPoint{cand, c, tput, lat_us, ok};
}

TEST(PerfSearchTest, ParetoFrontAndWinnerTable) {
  struct Case {
    const char* name;
    std::vector<SearchPoint> points;
    double bound_us;
    std::vector<size_t> front;
    std::optional<size_t> winner;
  };
  const std::vector<Case> cases = {
      {"empty", {}, 0, {}, std::nullopt},
      {"one point", {P(0, 1, 100, 1000)}, 0, {0}, 0},
      {"a sweep whose throughput grows with latency is all front",
       {P(0, 1, 100, 1000), P(0, 2, 180, 1200), P(0, 4, 300, 2000)},
       0,
       {0, 1, 2},
       2},
      {"the bound picks the fastest level within it",
       {P(0, 1, 100, 1000), P(0, 2, 180, 1200), P(0, 4, 300, 2000)},
       1500,
       {0, 1, 2},
       1},
      {"a bound nothing meets: no winner, the front stays",
       {P(0, 1, 100, 1000), P(0, 2, 180, 1200)},
       500,
       {0, 1},
       std::nullopt},
      {"a level beaten on both counts is off the front",
       {P(0, 1, 100, 1000), P(0, 2, 90, 1500), P(1, 1, 150, 900)},
       0,
       {2},
       2},
      {"a plateau: more latency for no more throughput is off the front",
       {P(0, 1, 100, 1000), P(0, 2, 200, 1000), P(0, 4, 200, 2000)},
       0,
       {1},
       1},
      {"equal throughput: the winner has the lower latency",
       {P(0, 4, 200, 2000), P(1, 2, 200, 1500)},
       0,
       {1},
       1},
      {"identical points: the first is kept", {P(0, 1, 100, 1000), P(1, 1, 100, 1000)}, 0, {0}, 0},
      {"failed levels are neither front nor winner",
       {P(0, 1, 100, 1000), P(1, 1, 500, 100, false)},
       0,
       {0},
       0},
      {"two configs interleave on the front, sorted by throughput",
       {P(0, 1, 100, 500), P(0, 2, 150, 900), P(1, 1, 120, 700), P(1, 2, 260, 1400),
        P(1, 4, 250, 3000)},
       1000,
       {0, 2, 1, 3},
       1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ParetoFront(c.points), c.front);
    EXPECT_EQ(PickWinner(c.points, c.bound_us), c.winner);
  }
}

TEST(PerfSearchTest, SweepStopsPastTheBoundOnFailureAndOnThePlateau) {
  struct Case {
    const char* name;
    std::vector<SearchPoint> levels;
    double bound_us;
    bool plateau;
    bool goes_on;
  };
  const std::vector<Case> cases = {
      {"nothing yet", {}, 0, true, true},
      {"one level", {P(0, 1, 100, 1000)}, 0, true, true},
      {"over the bound", {P(0, 1, 100, 1000)}, 900, true, false},
      {"at the bound", {P(0, 1, 100, 1000)}, 1000, true, true},
      {"a failed level", {P(0, 1, 100, 1000, false)}, 0, false, false},
      {"grows 10%", {P(0, 1, 100, 1000), P(0, 2, 110, 1000)}, 0, true, true},
      {"grows 3% once: one more level", {P(0, 1, 100, 1000), P(0, 2, 103, 1000)}, 0, true, true},
      {"grows 3% twice: the plateau",
       {P(0, 1, 100, 1000), P(0, 2, 103, 1000), P(0, 4, 104, 1000)},
       0,
       true,
       false},
      {"a stall, then a gain (batching shows at 4)",
       {P(0, 1, 100, 1000), P(0, 2, 101, 1000), P(0, 4, 180, 1000)},
       0,
       true,
       true},
      {"flat but the range is explicit",
       {P(0, 1, 100, 1000), P(0, 2, 103, 1000), P(0, 4, 104, 1000)},
       0,
       false,
       true},
      {"falls back below an earlier best twice",
       {P(0, 1, 100, 1000), P(0, 2, 200, 1000), P(0, 4, 150, 1000), P(0, 8, 205, 1000)},
       0,
       true,
       false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SweepGoesOn(c.levels, c.bound_us, c.plateau), c.goes_on);
  }
}

TEST(PerfSearchTest, ConcurrencyPlans) {
  ConcurrencyPlan doubling;
  doubling.max = 16;
  std::vector<int> seen;
  for (int c = doubling.start; c > 0; c = doubling.Next(c)) seen.push_back(c);
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_TRUE(doubling.StopsOnPlateau());
  ConcurrencyPlan range{2, 8, 3, false, 256};
  seen.clear();
  for (int c = range.start; c > 0; c = range.Next(c)) seen.push_back(c);
  EXPECT_EQ(seen, (std::vector<int>{2, 5, 8}));
  EXPECT_FALSE(range.StopsOnPlateau());
  ConcurrencyPlan open{1, 0, 4, false, 256};
  EXPECT_EQ(open.Next(1000), 1004);
  EXPECT_TRUE(open.StopsOnPlateau());
}

TEST(PerfSearchTest, CandidatesAreTheOriginalThenEveryCombination) {
  const SearchSettings original{8, false, 1};
  EXPECT_EQ(SearchCandidates(original, {}, {}, {}), std::vector<SearchSettings>{original});
  const auto c = SearchCandidates(original, {1, 8}, {1, 0}, {1, 2});
  const std::vector<SearchSettings> want = {
      {8, false, 1}, {1, true, 1}, {1, true, 2}, {1, false, 1},
      {1, false, 2}, {8, true, 1}, {8, true, 2}, {8, false, 2},
  };
  EXPECT_EQ(c, want);
  // A list not given keeps the model's value.
  EXPECT_EQ(SearchCandidates(original, {}, {}, {3}),
            (std::vector<SearchSettings>{original, {8, false, 3}}));
  EXPECT_EQ(Describe({4, true, 2}), "max_batch_size 4, dynamic batching on, 2 instances");
}

// The config API's answer for a model like examples/models/simple, trimmed.
const char* kConfig = R"({"name":"m","backend":"add_sub","max_batch_size":8,
  "input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]}],
  "dynamic_batching":{"preferred_batch_size":[2,8],"max_queue_delay_microseconds":"100",
                      "preserve_ordering":false,"priority_queue_policy":{}},
  "instance_group":[{"name":"m","kind":"KIND_CPU","count":2,"gpus":[]},
                    {"name":"m_1","kind":"KIND_CPU","count":1,"gpus":[]}],
  "parameters":{}})";

TEST(PerfSearchTest, SettingsFromTheConfigApi) {
  SearchSettings s;
  std::string error;
  ASSERT_TRUE(SettingsFromConfig(kConfig, s, error)) << error;
  EXPECT_EQ(s, (SearchSettings{8, true, 3}));
  ASSERT_TRUE(SettingsFromConfig(R"({"name":"m","max_batch_size":0})", s, error));
  EXPECT_EQ(s, (SearchSettings{0, false, 1}));
  EXPECT_FALSE(SettingsFromConfig("[1]", s, error));
  EXPECT_FALSE(error.empty());
}

TEST(PerfSearchTest, OverrideConfigEditsOnlyTheSearchedFields) {
  SearchSettings s;
  std::string error;
  const std::string edited = OverrideConfig(kConfig, {4, true, 1});
  ASSERT_TRUE(SettingsFromConfig(edited, s, error)) << error;
  EXPECT_EQ(s, (SearchSettings{4, true, 1}));
  // The preferred size above the new maximum is dropped; the rest stays.
  EXPECT_NE(edited.find(R"("preferred_batch_size":[2])"), std::string::npos) << edited;
  EXPECT_NE(edited.find(R"("max_queue_delay_microseconds":"100")"), std::string::npos) << edited;
  EXPECT_NE(edited.find(R"("input":[{"name":"INPUT0")"), std::string::npos) << edited;
  // One group, the first one's kind.
  EXPECT_NE(edited.find(R"("instance_group":[{"name":"m","kind":"KIND_CPU","gpus":[],"count":1}])"),
            std::string::npos)
      << edited;
  // [the old maximum] is the server's filling-in for none: it goes with a new maximum.
  const std::string filled = OverrideConfig(
      R"({"max_batch_size":8,"dynamic_batching":{"preferred_batch_size":[8],
          "max_queue_delay_microseconds":"100"}})",
      {16, true, 1});
  EXPECT_NE(filled.find(R"("dynamic_batching":{"max_queue_delay_microseconds":"100"})"),
            std::string::npos)
      << filled;
  const std::string off = OverrideConfig(kConfig, {1, false, 2});
  EXPECT_EQ(off.find("dynamic_batching"), std::string::npos) << off;
  // Dynamic batching on where the model had none: an empty message.
  const std::string on = OverrideConfig(R"({"name":"m","max_batch_size":4})", {4, true, 1});
  EXPECT_NE(on.find(R"("dynamic_batching":{})"), std::string::npos) << on;
  EXPECT_EQ(on.find("instance_group"), std::string::npos) << on;
  // An unchanged instance count keeps the groups as they are (a layout the server chose).
  const std::string same = OverrideConfig(kConfig, {8, false, 3});
  EXPECT_NE(same.find(R"({"name":"m_1","kind":"KIND_CPU","count":1,"gpus":[]}])"),
            std::string::npos)
      << same;
  // A layout the server chose (instance_layout "auto") stays with its count, and gives way to
  // a searched count.
  const char* automatic =
      R"({"max_batch_size":4,"parameters":{"instance_layout":{"string_value":"auto"},)"
      R"("x":{"string_value":"1"}},"instance_group":[{"kind":"KIND_CPU","count":2}]})";
  EXPECT_EQ(OverrideConfig(automatic, {4, false, 2}), automatic);
  EXPECT_EQ(OverrideConfig(automatic, {4, false, 1}),
            R"({"max_batch_size":4,"parameters":{"x":{"string_value":"1"}},)"
            R"("instance_group":[{"kind":"KIND_CPU","count":1}]})");
  EXPECT_EQ(OverrideConfig(R"({"max_batch_size":4})", {4, false, 2}),
            R"({"max_batch_size":4,"instance_group":[{"kind":"KIND_CPU","count":2}]})");
}

TEST(PerfSearchTest, ConfigTextIsThePbtxtOfTheSearchedFields) {
  EXPECT_EQ(ConfigText(kConfig, {8, true, 2}),
            "max_batch_size: 8\n"
            "dynamic_batching {\n"
            "  max_queue_delay_microseconds: 100\n"
            "  preferred_batch_size: [ 2, 8 ]\n"
            "}\n"
            "instance_group [\n"
            "  {\n"
            "    kind: KIND_CPU\n"
            "    count: 2\n"
            "  }\n"
            "]\n");
  EXPECT_EQ(ConfigText(R"({"name":"m","max_batch_size":4})", {16, true, 1}),
            "max_batch_size: 16\n"
            "dynamic_batching { }\n"
            "# instance_group: as the model has it (1 instance)\n");
  const std::string off = ConfigText(kConfig, {1, false, 1});
  EXPECT_EQ(off.find("dynamic_batching"), std::string::npos) << off;
}

}  // namespace
}  // namespace inferd::perf
