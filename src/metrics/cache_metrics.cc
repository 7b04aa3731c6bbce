#include "metrics/cache_metrics.h"

namespace inferd::metrics {
namespace {

MetricFamily One(const char* name, const char* help, MetricType type, uint64_t value) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  f.samples.push_back(Sample{{}, static_cast<double>(value)});
  return f;
}

}  // namespace

std::vector<MetricFamily> CacheFamilies(const ResponseCacheStats& s) {
  return {
      One("inferd_response_cache_capacity_bytes", "Response cache capacity in bytes",
          MetricType::kGauge, s.capacity_bytes),
      One("inferd_response_cache_bytes", "Bytes held by response cache entries", MetricType::kGauge,
          s.bytes),
      One("inferd_response_cache_entries", "Number of responses in the response cache",
          MetricType::kGauge, s.entries),
      One("inferd_response_cache_evictions_total",
          "Responses evicted (least recently used) to make room", MetricType::kCounter,
          s.evictions),
      One("inferd_response_cache_too_large_total",
          "Responses not cached because they are larger than the whole cache", MetricType::kCounter,
          s.too_large),
  };
}

}  // namespace inferd::metrics
