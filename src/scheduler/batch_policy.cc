#include "scheduler/batch_policy.h"

#include <algorithm>

namespace inferd {

BatchDecision DecideBatch(const BatchPolicy& policy, std::span<const BatchCandidate> queue,
                          std::chrono::steady_clock::time_point now) {
  BatchDecision d;
  if (queue.empty()) return d;
  if (!policy.batching) {
    d.take = 1;
    return d;
  }
  int64_t rows = 0;
  size_t n = 0;
  size_t preferred_prefix = 0;
  bool full = false;
  for (const auto& c : queue) {
    if (c.signature != queue.front().signature || rows + c.rows > policy.max_batch_size) {
      full = true;
      break;
    }
    rows += c.rows;
    ++n;
    if (std::binary_search(policy.preferred_batch_sizes.begin(), policy.preferred_batch_sizes.end(),
                           rows)) {
      preferred_prefix = n;
    }
  }
  if (n == 0) {  // a head larger than the batch limit runs alone
    d.take = 1;
    return d;
  }
  if (full || rows >= policy.max_batch_size) {
    d.take = n;
    return d;
  }
  if (preferred_prefix > 0) {
    d.take = preferred_prefix;
    return d;
  }
  const auto deadline = queue.front().arrival + policy.max_queue_delay;
  if (policy.max_queue_delay.count() == 0 || now >= deadline) {
    d.take = n;
    return d;
  }
  d.wake_at = deadline;
  return d;
}

}  // namespace inferd
