// Tracing for a middleman (docs/gateway.md, docs/tracing.md): OpenTelemetry
// spans for the requests a service answers and the calls it makes to
// inferd, joined to the caller's trace by W3C Trace Context.
//
//   Tracer tracer({.rate = 1}, exporter);        // the sampling decision
//   auto server = tracer.StartServerSpan("POST /v1/classify", traceparents, tracestates);
//   call_options.trace = server;                 // InferdPool: a CLIENT child per
//                                                // call, traceparent in its metadata
//   server->End();                               // exported
//
// Sampling: a request carrying a valid `traceparent` follows the caller's
// decision (W3C `sampled` flag; OpenTelemetry's parent-based sampler): set,
// the trace continues, its trace id and tracestate kept; clear, a
// non-recording span forwards the caller's context unchanged to inferd, so
// that nothing downstream records it either; otherwise every `rate`-th request starts a new trace
// while `count` allows (-1: no limit; rate 0: only propagated requests) — Triton's rules for
// inferd's own requests, so both processes sample alike.
//
// Ownership: spans are shared; a span is exported when End is called (or
// when the last reference goes, for a span nobody ended: it is marked an
// error). Children keep no reference to their parent.
// Threading: Tracer and TraceSpan methods may be called from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "middleman/metrics_registry.h"
#include "trace/span.h"
#include "trace/span_exporter.h"

namespace inferd::trace {
class OtlpExporter;
}

namespace inferd::middleman {

class TraceSpan {
 public:
  TraceSpan(trace::Span span, std::shared_ptr<trace::SpanExporter> exporter);
  // A non-recording span: the caller's context (its trace id, its span id
  // as the parent, its flags without `sampled`) handed on to every call made
  // inside it; nothing is exported, attributes and events are dropped.
  static std::shared_ptr<TraceSpan> NonRecording(const trace::TraceId& trace_id,
                                                 const trace::SpanId& parent,
                                                 std::string trace_state, uint8_t trace_flags);
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

  // A span of the same trace with this one as its parent, started now.
  std::shared_ptr<TraceSpan> StartChild(std::string name, trace::SpanKind kind) const;

  void SetAttribute(std::string key, std::variant<std::string, int64_t, bool, double> value);
  void AddEvent(std::string name);
  // Status ERROR with `message` (the span still has to be ended).
  void SetError(std::string message);
  // Ends the span now and hands it to the exporter; later calls do nothing.
  void End();

  // The `traceparent` for a call made inside this span: this span as the
  // caller's parent, the trace's flags with `sampled` set (non-recording:
  // the caller's context as it came, `sampled` clear).
  std::string traceparent() const;
  bool recording() const { return recording_; }
  // The tracestate as it came in (forwarded unchanged).
  const std::string& tracestate() const { return trace_state_; }
  const trace::TraceId& trace_id() const { return trace_id_; }
  const trace::SpanId& span_id() const { return span_id_; }

 private:
  const trace::TraceId trace_id_;
  const trace::SpanId span_id_;
  const std::string trace_state_;
  const uint8_t trace_flags_;
  std::shared_ptr<trace::SpanExporter> exporter_;
  bool recording_ = true;
  std::mutex mu_;
  trace::Span span_;  // under mu_
  bool ended_ = false;
};

struct TracingOptions {
  uint32_t rate = 1000;  // every rate-th request without a context; 0: none
  int64_t count = -1;    // traces left to start; -1: no limit
};

class Tracer {
 public:
  Tracer(TracingOptions options, std::shared_ptr<trace::SpanExporter> exporter);

  // The SERVER span of a request whose `traceparent` / `tracestate` header
  // fields (every one, in order) are given; null when it is not traced.
  std::shared_ptr<TraceSpan> StartServerSpan(std::string name,
                                             const std::vector<std::string_view>& traceparents,
                                             const std::vector<std::string_view>& tracestates);
  // The same from a gRPC call's client metadata.
  std::shared_ptr<TraceSpan> StartServerSpan(
      std::string name, const std::multimap<::grpc::string_ref, ::grpc::string_ref>& metadata);

 private:
  bool SampleNewTrace();

  const TracingOptions options_;
  std::shared_ptr<trace::SpanExporter> exporter_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<int64_t> count_left_;
};

// The exporter's counters as `<prefix>_trace_spans_exported_total`,
// `..._trace_spans_dropped_total`, `..._trace_export_failures_total` and
// the gauge `..._trace_spans_queued`, read at every scrape. `exporter` must
// outlive the registry's renders.
void ExposeExporterMetrics(MetricsRegistry& metrics, const std::string& prefix,
                           const trace::OtlpExporter& exporter);

}  // namespace inferd::middleman
