// The response cache's metrics: Triton's per-model nv_cache_* counters only
// for versions that cache, and inferd's cache-wide gauges.
#include "metrics/cache_metrics.h"

#include <gtest/gtest.h>

#include "metrics/model_metrics.h"

namespace inferd::metrics {
namespace {

std::string Text(const std::vector<MetricFamily>& fams) {
  std::string out;
  WriteText(fams, out);
  return out;
}

TEST(CacheMetricsTest, PerModelCountersOnlyForCachingVersions) {
  ModelStats caching, plain;
  caching.EnableCacheStats();
  caching.RecordCacheHit(3000);
  caching.RecordCacheHit(2000);
  caching.RecordCacheMiss(7000);
  plain.RecordCacheMiss(1);  // never happens, and never shown
  std::vector<ModelStatistics> v = {{"c", 1, caching.Snapshot(), 0}, {"p", 1, plain.Snapshot(), 0}};
  const std::string text = Text(ModelFamilies(v, {}));
  EXPECT_NE(text.find("nv_cache_num_hits_per_model{model=\"c\",version=\"1\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nv_cache_num_misses_per_model{model=\"c\",version=\"1\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("nv_cache_hit_duration_per_model{model=\"c\",version=\"1\"} 5"),
            std::string::npos);
  EXPECT_NE(text.find("nv_cache_miss_duration_per_model{model=\"c\",version=\"1\"} 7"),
            std::string::npos);
  EXPECT_EQ(text.find("nv_cache_num_hits_per_model{model=\"p\""), std::string::npos);
}

TEST(CacheMetricsTest, CacheWideFamilies) {
  ResponseCacheStats s;
  s.capacity_bytes = 1000;
  s.bytes = 600;
  s.entries = 2;
  s.evictions = 5;
  s.too_large = 1;
  const std::string text = Text(CacheFamilies(s));
  for (const char* line :
       {"inferd_response_cache_capacity_bytes 1000", "inferd_response_cache_bytes 600",
        "inferd_response_cache_entries 2", "inferd_response_cache_evictions_total 5",
        "inferd_response_cache_too_large_total 1", "# TYPE inferd_response_cache_entries gauge",
        "# TYPE inferd_response_cache_evictions_total counter"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

}  // namespace
}  // namespace inferd::metrics
