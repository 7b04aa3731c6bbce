#include "metrics/trace_metrics.h"

namespace inferd::metrics {
namespace {

MetricFamily Counter(const char* name, const char* help, uint64_t value) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = MetricType::kCounter;
  f.samples.push_back(Sample{{}, static_cast<double>(value)});
  return f;
}

}  // namespace

std::vector<MetricFamily> TraceFamilies(uint64_t sampled, const trace::TraceCollectorStats& s) {
  return {
      Counter("inferd_trace_requests_sampled_total", "Inference requests chosen to be traced",
              sampled),
      Counter("inferd_trace_traces_completed_total",
              "Traces completed and written to the trace file or turned into spans", s.traces),
      Counter("inferd_trace_spans_exported_total",
              "Spans the OpenTelemetry collector accepted (opentelemetry mode)", s.spans_exported),
      Counter("inferd_trace_spans_dropped_total",
              "Spans lost: exporter queue full, refused or failed exports, shutdown "
              "(opentelemetry mode)",
              s.spans_dropped),
      Counter("inferd_trace_export_failures_total",
              "Span batches given up after a non-retryable answer or exhausted retries "
              "(opentelemetry mode)",
              s.export_failures),
  };
}

}  // namespace inferd::metrics
