#include "discovery/weight_policy.h"

#include <algorithm>
#include <cmath>

namespace inferd::discovery {

double Smooth(double previous, double sample, double smoothing) {
  if (sample < 0) return previous;
  if (previous < 0) return sample;
  return previous + smoothing * (sample - previous);
}

namespace {

double ExpectedWaitUs(const HostLoad& h, const WeightOptions& o) {
  double wait = std::max(h.queue_us_per_request, 0.0);
  wait += o.inflight_cost_us * std::max(h.inflight, 0.0);
  return wait;
}

}  // namespace

std::vector<uint32_t> ComputeWeights(const std::vector<HostLoad>& hosts,
                                     const WeightOptions& options) {
  std::vector<uint32_t> weights;
  weights.reserve(hosts.size());
  if (hosts.empty()) return weights;
  std::vector<double> waits;
  waits.reserve(hosts.size());
  for (const auto& h : hosts) waits.push_back(ExpectedWaitUs(h, options));
  std::sort(waits.begin(), waits.end());
  const size_t n = waits.size();
  const double median = n % 2 == 1 ? waits[n / 2] : (waits[n / 2 - 1] + waits[n / 2]) / 2;
  const double allowed = options.band * median + std::max(options.floor_us, 1.0);
  for (const auto& h : hosts) {
    const double share = std::min(1.0, allowed / (ExpectedWaitUs(h, options) + 1e-9));
    // Steps of a tenth: hosts under similar load get equal weights, which
    // clients can balance round robin (snapshot_builder.h).
    auto w = static_cast<uint32_t>(std::lround(share * 10)) * (kMaxWeight / 10);
    w = std::clamp(w, kMinWeight, kMaxWeight);
    if (h.previous_weight != 0) {
      double change = std::abs(static_cast<double>(w) - h.previous_weight) / h.previous_weight;
      if (change <= options.hysteresis) w = h.previous_weight;
    }
    weights.push_back(w);
  }
  return weights;
}

}  // namespace inferd::discovery
