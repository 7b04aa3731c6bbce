// OpenTelemetry mode: a finished trace group becomes spans in the shape
// Triton's OpenTelemetry mode exports (PROTOCOL-NEXT §6.6), all
// SPAN_KIND_SERVER:
//
//   InferRequest                 root: child of the propagated context if
//   │                            any; HTTP_* / GRPC_* stamps as events
//   └─ <model name>              REQUEST_START → REQUEST_END; attributes
//      │                         triton.model_name, triton.model_version,
//      │                         triton.trace_id, triton.trace_parent_id,
//      │                         triton.request_id (if set); events
//      │                         REQUEST_START, QUEUE_START, REQUEST_END
//      ├─ compute                COMPUTE_START → COMPUTE_END, with
//      │                         COMPUTE_INPUT_END / COMPUTE_OUTPUT_START
//      └─ <step model name>      an ensemble step (child trace), nested
//         └─ compute             under its parent's model span
//
// Every span shares the trace id (the propagated one, else a new one) and
// the propagated tracestate. Times are the steady-clock stamps moved to
// wall-clock nanoseconds by one fixed offset (taken when the collector is
// made), so durations are exact and spans line up with other processes'
// to within the clocks' agreement.
//
// Threading: BuildSpans is pure (ids from `ids`); SpanCollector may be
// called from any thread (the exporter queues without blocking).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trace/request_trace.h"
#include "trace/span.h"
#include "trace/span_exporter.h"

namespace inferd::trace {

struct SpanIdSource {
  std::function<TraceId()> trace_id;
  std::function<SpanId()> span_id;
};
// Random ids (trace_context.h's NewTraceId / NewSpanId).
SpanIdSource RandomSpanIds();

// steady_ns + offset_ns = wall-clock ns.
std::vector<Span> BuildSpans(const TraceGroup& group, int64_t offset_ns, const SpanIdSource& ids);

// The wall clock minus the steady clock, now, in nanoseconds.
int64_t SteadyToWallOffsetNs();

// A TraceCollector that hands each group's spans to an exporter.
class SpanCollector : public TraceCollector {
 public:
  // `stats`: the exporter's counts for metrics (exported, failed batches);
  // may be empty. `close`: the exporter's bounded shutdown flush.
  struct ExporterHooks {
    std::function<uint64_t()> exported;
    std::function<uint64_t()> failed_exports;
    std::function<void()> close;
  };
  SpanCollector(std::shared_ptr<SpanExporter> exporter, ExporterHooks hooks,
                SpanIdSource ids = RandomSpanIds());

  void Collect(TraceGroup group) override;
  TraceCollectorStats stats() const override;
  void Close() override;

 private:
  const std::shared_ptr<SpanExporter> exporter_;
  const ExporterHooks hooks_;
  const SpanIdSource ids_;
  const int64_t offset_ns_;
  std::atomic<uint64_t> traces_{0};
};

}  // namespace inferd::trace
