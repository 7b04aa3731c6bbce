// infer-perf --search: candidates, the concurrency plan, the sweep's stop
// rule, the Pareto front and the winner (perf_search.h).
#include "perf_search.h"

#include <algorithm>

namespace inferd::perf {

std::string Describe(const SearchSettings& s) {
  return "max_batch_size " + std::to_string(s.max_batch_size) + ", dynamic batching " +
         (s.dynamic_batching ? "on" : "off") + ", " + std::to_string(s.instance_count) +
         (s.instance_count == 1 ? " instance" : " instances");
}

std::vector<SearchSettings> SearchCandidates(const SearchSettings& original,
                                             const std::vector<int>& max_batch_sizes,
                                             const std::vector<int>& dynamic_batching,
                                             const std::vector<int>& instance_counts) {
  auto or_original = [](const std::vector<int>& v, int original_value) {
    return v.empty() ? std::vector<int>{original_value} : v;
  };
  std::vector<SearchSettings> out{original};
  for (int b : or_original(max_batch_sizes, original.max_batch_size)) {
    for (int d : or_original(dynamic_batching, original.dynamic_batching ? 1 : 0)) {
      for (int n : or_original(instance_counts, original.instance_count)) {
        const SearchSettings s{b, d != 0, n};
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
      }
    }
  }
  return out;
}

int ConcurrencyPlan::Next(int c) const {
  if (doubling) return c * 2 <= max ? c * 2 : 0;
  const int next = c + step;
  return end == 0 || next <= end ? next : 0;
}

bool SweepGoesOn(const std::vector<SearchPoint>& levels, double bound_us, bool plateau,
                 double min_gain, int patience) {
  if (levels.empty()) return true;
  const SearchPoint& last = levels.back();
  if (!last.ok || (bound_us > 0 && last.latency_us > bound_us)) return false;
  if (!plateau) return true;
  double best = levels[0].throughput;
  int stale = 0;  // the levels since the last that gained
  for (size_t i = 1; i < levels.size(); ++i) {
    stale = levels[i].throughput >= best * (1 + min_gain) ? 0 : stale + 1;
    best = std::max(best, levels[i].throughput);
  }
  return stale < patience;
}

namespace {

// a beats b: at least as much throughput, at most as much latency, and
// better in one of them.
bool Dominates(const SearchPoint& a, const SearchPoint& b) {
  return a.throughput >= b.throughput && a.latency_us <= b.latency_us &&
         (a.throughput > b.throughput || a.latency_us < b.latency_us);
}

}  // namespace

std::vector<size_t> ParetoFront(const std::vector<SearchPoint>& points) {
  std::vector<size_t> front;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].ok) continue;
    bool beaten = false;
    for (size_t j = 0; j < points.size() && !beaten; ++j) {
      if (j == i || !points[j].ok) continue;
      const bool equal = points[j].throughput == points[i].throughput &&
                         points[j].latency_us == points[i].latency_us;
      beaten = Dominates(points[j], points[i]) || (equal && j < i);
    }
    if (!beaten) front.push_back(i);
  }
  std::stable_sort(front.begin(), front.end(),
                   [&](size_t a, size_t b) { return points[a].throughput < points[b].throughput; });
  return front;
}

std::optional<size_t> PickWinner(const std::vector<SearchPoint>& points, double bound_us) {
  std::optional<size_t> best;
  for (size_t i = 0; i < points.size(); ++i) {
    const SearchPoint& p = points[i];
    if (!p.ok || (bound_us > 0 && p.latency_us > bound_us)) continue;
    if (!best || p.throughput > points[*best].throughput ||
        (p.throughput == points[*best].throughput && p.latency_us < points[*best].latency_us)) {
      best = i;
    }
  }
  return best;
}

}  // namespace inferd::perf
