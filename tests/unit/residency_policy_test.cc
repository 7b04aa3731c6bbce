// The pure residency decisions (repository/residency_policy.h), table by
// table: which models an eviction picks, estimates, footprints, parsing.
#include "repository/residency_policy.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

ResidentModel M(const std::string& name, uint64_t bytes, uint64_t last_use, int64_t leases = 0,
                bool pinned = false, bool explicit_load = false) {
  ResidentModel m;
  m.name = name;
  m.bytes = bytes;
  m.last_use = last_use;
  m.leases = leases;
  m.pinned = pinned;
  m.protected_explicit = explicit_load;
  return m;
}

struct EvictionCase {
  std::string what;
  std::vector<ResidentModel> resident;
  uint64_t budget;
  uint64_t incoming;
  std::string exclude;
  std::vector<std::string> victims;
  bool fits;
};

TEST(ResidencyPolicyTest, ChooseEvictions) {
  const std::vector<EvictionCase> cases = {
      {"fits without evicting", {M("a", 10, 1), M("b", 10, 2)}, 40, 10, "c", {}, true},
      {"exactly the budget fits", {M("a", 10, 1), M("b", 10, 2)}, 30, 10, "c", {}, true},
      {"least recently used goes first",
       {M("a", 10, 5), M("b", 10, 1), M("c", 10, 3)},
       30,
       10,
       "d",
       {"b"},
       true},
      {"as many as needed, oldest first",
       {M("a", 10, 5), M("b", 10, 1), M("c", 10, 3)},
       30,
       15,
       "d",
       {"b", "c"},
       true},
      {"a busy model is skipped",
       {M("a", 10, 5), M("b", 10, 1, /*leases=*/2), M("c", 10, 3)},
       30,
       10,
       "d",
       {"c"},
       true},
      {"a pinned model is skipped",
       {M("a", 10, 5), M("b", 10, 1, 0, /*pinned=*/true), M("c", 10, 3)},
       30,
       10,
       "d",
       {"c"},
       true},
      {"an explicitly loaded model is skipped",
       {M("a", 10, 5), M("b", 10, 1, 0, false, /*explicit_load=*/true), M("c", 10, 3)},
       30,
       10,
       "d",
       {"c"},
       true},
      {"the model made room for is never a victim",
       {M("a", 10, 1), M("b", 10, 2)},
       15,
       0,
       "a",
       {"b"},
       true},
      {"all busy: nothing to evict, does not fit",
       {M("a", 10, 1, 1), M("b", 10, 2, 1)},
       20,
       10,
       "c",
       {},
       false},
      {"not enough idle: every idle one, does not fit",
       {M("a", 10, 1), M("b", 10, 2, 1), M("c", 10, 3)},
       20,
       15,
       "d",
       {"a", "c"},
       false},
      {"ties broken by name", {M("b", 10, 1), M("a", 10, 1)}, 10, 0, "", {"a"}, true},
      {"a large old model frees room for several",
       {M("big", 50, 1), M("s1", 5, 2), M("s2", 5, 3)},
       60,
       10,
       "new",
       {"big"},
       true},
      {"nothing resident, incoming above budget", {}, 10, 20, "x", {}, false},
  };
  for (const auto& c : cases) {
    auto choice = ChooseEvictions(c.resident, c.budget, c.incoming, c.exclude);
    EXPECT_EQ(choice.victims, c.victims) << c.what;
    EXPECT_EQ(choice.fits, c.fits) << c.what;
  }
}

TEST(ResidencyPolicyTest, FitsWhenBusyOnesAreIdle) {
  // a (busy) would have to go: waiting for it helps.
  auto c = ChooseEvictions({M("a", 10, 1, /*leases=*/1), M("b", 10, 2)}, 12, 5, "x");
  EXPECT_FALSE(c.fits);
  EXPECT_TRUE(c.fits_when_idle);
  EXPECT_EQ(c.victims, std::vector<std::string>{"b"});
  // Only pinned ones hold memory: waiting helps nobody.
  c = ChooseEvictions({M("a", 10, 1, 1, /*pinned=*/true)}, 12, 5, "x");
  EXPECT_FALSE(c.fits);
  EXPECT_FALSE(c.fits_when_idle);
  // Fits anyway.
  c = ChooseEvictions({M("a", 10, 1, 1)}, 20, 5, "x");
  EXPECT_TRUE(c.fits);
  EXPECT_TRUE(c.fits_when_idle);
}

TEST(ResidencyPolicyTest, EstimateFootprint) {
  EXPECT_EQ(EstimateFootprint({}, {}, "a"), 0u);
  EXPECT_EQ(EstimateFootprint({{"a", 7}, {"b", 30}}, {7, 30}, "a"), 7u);   // its own measure
  EXPECT_EQ(EstimateFootprint({{"a", 7}, {"b", 30}}, {7, 30}, "c"), 30u);  // the largest recent
  // An old outlier (say the first load's one-time costs) out of the window.
  EXPECT_EQ(EstimateFootprint({{"a", 700}, {"b", 30}}, {30, 20}, "c"), 30u);
}

TEST(ResidencyPolicyTest, Footprint) {
  struct Case {
    int64_t before, after;
    uint64_t files, device, want;
  };
  const std::vector<Case> cases = {
      {100, 1100, 10, 0, 1000},   // heap growth
      {100, 150, 500, 0, 500},    // files larger than the heap growth
      {500, 100, 30, 0, 30},      // heap shrank (others freed memory): the files
      {100, 1100, 10, 64, 1064},  // plus device memory
      {-1, -1, 40, 0, 40},        // no heap figures
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Footprint(c.before, c.after, c.files, c.device), c.want)
        << c.before << " " << c.after << " " << c.files;
  }
}

TEST(ResidencyPolicyTest, TooLargeReasonNamesBothNumbers) {
  const std::string r = TooLargeReason("big", 2048, 1024);
  EXPECT_NE(r.find("'big'"), std::string::npos) << r;
  EXPECT_NE(r.find("2048"), std::string::npos) << r;
  EXPECT_NE(r.find("1024"), std::string::npos) << r;
}

TEST(ResidencyPolicyTest, ParseByteSize) {
  const std::vector<std::pair<std::string, uint64_t>> good = {
      {"1", 1},        {"1000", 1000},     {"1K", 1024},        {"1k", 1024},       {"2KiB", 2048},
      {"3M", 3 << 20}, {"1G", 1ull << 30}, {"1gb", 1ull << 30}, {"2T", 2ull << 40}, {"10B", 10},
  };
  for (const auto& [text, want] : good) {
    auto n = ParseByteSize("model-memory-budget", text);
    ASSERT_TRUE(n.ok()) << text << ": " << n.status().message();
    EXPECT_EQ(*n, want) << text;
  }
  for (const std::string bad :
       {"", "0", "-1", "K", "1X", "1.5G", "99999999999999999999", "17179869184T", " 1"}) {
    auto n = ParseByteSize("model-memory-budget", bad);
    EXPECT_FALSE(n.ok()) << bad;
    if (!n.ok()) {
      EXPECT_NE(n.status().message().find("--model-memory-budget"), std::string::npos);
    }
  }
}

TEST(ResidencyPolicyTest, ParseResidencyParameter) {
  EXPECT_TRUE(*ParseResidencyParameter("pinned"));
  EXPECT_FALSE(*ParseResidencyParameter("lru"));
  EXPECT_FALSE(*ParseResidencyParameter(""));
  EXPECT_FALSE(ParseResidencyParameter("Pinned").ok());
}

}  // namespace
}  // namespace inferd
