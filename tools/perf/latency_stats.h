// Summary statistics of a measurement window (pure; unit-tested).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inferd::perf {

struct WindowSummary {
  uint64_t requests = 0;
  uint64_t errors = 0;
  double seconds = 0;
  double throughput = 0;  // successful inferences (batch-weighted) per second
  double avg_us = 0, p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0;
  double pct_us = 0;  // the --percentile value
};

// Nearest-rank percentile (p in (0, 100]) of a sorted vector; 0 if empty.
double Percentile(const std::vector<uint64_t>& sorted_us, double p);

// Summarises latencies (microseconds; sorted in place) of a window.
WindowSummary Summarize(std::vector<uint64_t>& latencies_us, uint64_t errors, double seconds,
                        int batch_size, double percentile);

// True when the last `n` windows agree within `tolerance` (0.1 = 10%) on
// throughput and on the chosen latency (pct_us if percentile > 0, else avg).
bool IsStable(const std::vector<WindowSummary>& windows, size_t n, double tolerance,
              bool use_percentile);

}  // namespace inferd::perf
