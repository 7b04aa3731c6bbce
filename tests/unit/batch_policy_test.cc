#include "scheduler/batch_policy.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

using namespace std::chrono_literals;
using TP = std::chrono::steady_clock::time_point;

struct Case {
  const char* what;
  BatchPolicy policy;
  std::vector<BatchCandidate> queue;
  int64_t now_us;   // since t0
  size_t take;      // expected
  int64_t wake_us;  // expected wake (since t0) when take == 0; -1 = never
};

TEST(BatchPolicyTest, Table) {
  const TP t0{std::chrono::seconds(100)};
  auto at = [&](int64_t us) { return t0 + std::chrono::microseconds(us); };
  BatchPolicy b8{true, 8, {8}, 1000us};
  BatchPolicy pref{true, 8, {2, 4}, 1000us};
  BatchPolicy nodelay{true, 8, {8}, 0us};
  BatchPolicy off{false, 8, {}, 1000us};
  auto C = [&](int64_t rows, int64_t t_us, std::string_view sig = "a") {
    return BatchCandidate{sig, rows, at(t_us)};
  };
  const std::vector<Case> cases = {
      {"empty queue waits forever", b8, {}, 0, 0, -1},
      {"no batching takes one", off, {C(1, 0), C(1, 0)}, 0, 1, 0},
      {"waits for the delay", b8, {C(1, 0), C(1, 10)}, 500, 0, 1000},
      {"delay expired takes all", b8, {C(1, 0), C(1, 10)}, 1000, 2, 0},
      {"full batch at once", b8, {C(4, 0), C(4, 1)}, 1, 2, 0},
      {"next does not fit: take prefix", b8, {C(5, 0), C(4, 1)}, 1, 1, 0},
      {"incompatible shape stops the batch", b8, {C(1, 0), C(1, 1, "b"), C(1, 2)}, 1, 1, 0},
      {"zero delay takes what is there", nodelay, {C(1, 0), C(2, 0)}, 0, 2, 0},
      {"preferred size reached", pref, {C(1, 0), C(1, 0), C(1, 0)}, 1, 2, 0},
      {"largest preferred prefix", pref, {C(1, 0), C(1, 0), C(1, 0), C(1, 0), C(1, 0)}, 1, 4, 0},
      {"below every preferred waits", pref, {C(1, 0)}, 1, 0, 1000},
      {"oversized head runs alone", b8, {C(9, 0), C(1, 0)}, 0, 1, 0},
      {"exactly max rows", b8, {C(8, 0)}, 0, 1, 0},
  };
  for (const auto& c : cases) {
    const BatchDecision d = DecideBatch(c.policy, c.queue, at(c.now_us));
    EXPECT_EQ(d.take, c.take) << c.what;
    if (c.take == 0) {
      if (c.wake_us < 0) {
        EXPECT_EQ(d.wake_at, TP::max()) << c.what;
      } else {
        EXPECT_EQ(d.wake_at, at(c.wake_us)) << c.what;
      }
    }
  }
}

}  // namespace
}  // namespace inferd
