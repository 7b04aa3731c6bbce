// The dynamic batcher's decision, apart from any waiting: given the queue
// (in the order requests should be served) and the time, either take the
// first N requests now or wait until a time. Pure; covered by a table test.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace inferd {

struct BatchPolicy {
  bool batching = true;                        // false: every request executes alone
  int64_t max_batch_size = 1;                  // rows
  std::vector<int64_t> preferred_batch_sizes;  // rows, ascending
  std::chrono::microseconds max_queue_delay{0};
};

struct BatchCandidate {
  std::string_view signature;  // non-batch shapes; only equal ones batch together
  int64_t rows = 1;
  std::chrono::steady_clock::time_point arrival;
};

struct BatchDecision {
  size_t take = 0;  // take the first `take` candidates now
  std::chrono::steady_clock::time_point wake_at = std::chrono::steady_clock::time_point::max();
};

// Rules, in order (Triton's dynamic batcher):
//  1. Only a prefix of compatible requests (same signature as the head)
//     whose rows fit in max_batch_size can form the batch.
//  2. Full (max rows reached, or the next request does not fit or is
//     incompatible): take the prefix now.
//  3. A prefix whose rows equal a preferred size: take the longest such
//     prefix now.
//  4. The head has waited max_queue_delay (or the delay is 0): take the
//     whole prefix now.
//  5. Otherwise wait until the head's delay runs out.
BatchDecision DecideBatch(const BatchPolicy& policy, std::span<const BatchCandidate> queue,
                          std::chrono::steady_clock::time_point now);

}  // namespace inferd
