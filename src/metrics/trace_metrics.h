// Tracing's server-wide families (docs/metrics.md, docs/tracing.md):
// requests sampled, traces completed, and in OpenTelemetry mode the spans
// the OTLP exporter delivered or lost. inferd's own families (Triton has
// none for tracing).
//
// Pure function of its input; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/exposition.h"
#include "trace/request_trace.h"

namespace inferd::metrics {

std::vector<MetricFamily> TraceFamilies(uint64_t sampled, const trace::TraceCollectorStats& stats);

}  // namespace inferd::metrics
