// VersionServices: what a loading model version takes from the server —
// the backends, the clock, the statistics' histograms, the way ensemble
// steps reach their models, and the server-wide response cache and rate
// limiter (each null when the server runs without it).
//
// Ownership: a plain value, copied into each ModelVersion::Load call; the
// registry and clock are not owned and outlive every version; the cache and
// limiter are shared by the server and every version that uses them.
#pragma once

#include <memory>

#include "backend/backend_registry.h"
#include "scheduler/clock.h"
#include "scheduler/ensemble_scheduler.h"
#include "scheduler/model_stats.h"

namespace inferd {

class ResponseCache;  // cache/response_cache.h
class RateLimiter;    // scheduler/rate_limiter.h

struct VersionServices {
  const BackendRegistry* registry = nullptr;  // required for models with a backend
  Clock* clock = RealClock::Get();
  StatsHistogramOptions histograms;
  InferFunction ensemble_infer;  // empty: ensembles fail to load
  // --cache-config local,size=N; null: no cache (response_cache.enable is
  // then accepted and ignored, as in Triton).
  std::shared_ptr<ResponseCache> response_cache;
  // --rate-limit=execution_count; null: off (rate_limiter config ignored).
  std::shared_ptr<RateLimiter> rate_limiter;
};

}  // namespace inferd
