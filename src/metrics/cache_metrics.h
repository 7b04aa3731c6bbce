// The response cache's server-wide families (docs/response_cache.md):
// capacity, bytes and entries held (gauges), evictions and responses too
// large to insert (counters). Triton has no such families (its per-model
// nv_cache_* counters are in model_metrics.cc); these are inferd's.
//
// Pure function of its input; thread-compatible.
#pragma once

#include <vector>

#include "cache/response_cache.h"
#include "metrics/exposition.h"

namespace inferd::metrics {

std::vector<MetricFamily> CacheFamilies(const ResponseCacheStats& stats);

}  // namespace inferd::metrics
