#include "latency_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace inferd::perf {

double Percentile(const std::vector<uint64_t>& sorted_us, double p) {
  if (sorted_us.empty()) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(sorted_us.size()));
  const size_t idx = static_cast<size_t>(std::clamp(rank, 1.0, double(sorted_us.size()))) - 1;
  return static_cast<double>(sorted_us[idx]);
}

WindowSummary Summarize(std::vector<uint64_t>& lat, uint64_t errors, double seconds, int batch_size,
                        double percentile) {
  std::sort(lat.begin(), lat.end());
  WindowSummary s;
  s.requests = lat.size();
  s.errors = errors;
  s.seconds = seconds;
  s.throughput = seconds > 0 ? static_cast<double>(lat.size()) * batch_size / seconds : 0;
  if (!lat.empty()) {
    s.avg_us = std::accumulate(lat.begin(), lat.end(), 0.0) / static_cast<double>(lat.size());
  }
  s.p50_us = Percentile(lat, 50);
  s.p90_us = Percentile(lat, 90);
  s.p95_us = Percentile(lat, 95);
  s.p99_us = Percentile(lat, 99);
  s.pct_us = percentile > 0 ? Percentile(lat, percentile) : s.avg_us;
  return s;
}

bool IsStable(const std::vector<WindowSummary>& w, size_t n, double tol, bool use_percentile) {
  if (w.size() < n) return false;
  auto within = [&](auto get) {
    double lo = 1e300, hi = 0;
    for (size_t i = w.size() - n; i < w.size(); ++i) {
      lo = std::min(lo, get(w[i]));
      hi = std::max(hi, get(w[i]));
    }
    return hi <= 0 || (hi - lo) / hi <= tol;
  };
  return within([](const WindowSummary& s) { return s.throughput; }) &&
         within([&](const WindowSummary& s) { return use_percentile ? s.pct_us : s.avg_us; });
}

}  // namespace inferd::perf
