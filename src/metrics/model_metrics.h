// Per-model metric families, built from statistics snapshots: Triton's
// families (PROTOCOL.md §4.3, names and labels exact) and inferd's
// histograms and load failures (docs/metrics.md).
//
// Pure functions of their inputs; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "metrics/exposition.h"
#include "server/inference_server.h"

namespace inferd::metrics {

// Every per-model family for the given ready versions (labels `model`,
// `version`), and `inferd_model_load_failures_total` (label `model`) for
// every model in `versions` or `load_failures`.
std::vector<MetricFamily> ModelFamilies(const std::vector<ModelStatistics>& versions,
                                        const std::map<std::string, uint64_t>& load_failures);

// A histogram snapshot as an exposition series; bounds and sum are divided
// by `per_unit` (1e9: nanoseconds to seconds).
HistogramSample ToHistogramSample(const HistogramSnapshot& h, double per_unit, Labels labels);

// Parses a latency bucket list for --metrics-latency-buckets: comma-separated
// seconds, strictly ascending after rounding to whole nanoseconds, each
// between 1e-9 and 1e6. Errors name `flag`.
StatusOr<std::vector<double>> ParseLatencyBuckets(std::string_view flag, std::string_view text);

}  // namespace inferd::metrics
