#include "middleman/tracing.h"

#include <chrono>

#include "trace/otlp_exporter.h"
#include "trace/trace_context.h"

namespace inferd::middleman {
namespace {

constexpr uint8_t kSampled = 0x01;
constexpr uint8_t kRandom = 0x02;
// Span.flags bits (OTLP SpanFlags): whether the parent was remote is known,
// and that it was.
constexpr uint32_t kHasIsRemote = 0x100;
constexpr uint32_t kIsRemote = 0x200;

uint64_t NowUnixNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

trace::Span NewSpan(std::string name, trace::SpanKind kind, const trace::TraceId& trace_id,
                    const trace::SpanId& parent, std::string trace_state, uint8_t trace_flags,
                    bool remote_parent) {
  trace::Span s;
  s.trace_id = trace_id;
  s.span_id = trace::NewSpanId();
  s.parent_span_id = parent;
  s.trace_state = std::move(trace_state);
  s.flags = trace_flags | kHasIsRemote | (remote_parent ? kIsRemote : 0);
  s.name = std::move(name);
  s.kind = kind;
  s.start_unix_ns = NowUnixNs();
  return s;
}

}  // namespace

TraceSpan::TraceSpan(trace::Span span, std::shared_ptr<trace::SpanExporter> exporter)
    : trace_id_(span.trace_id),
      span_id_(span.span_id),
      trace_state_(span.trace_state),
      trace_flags_(static_cast<uint8_t>(span.flags & 0xff)),
      exporter_(std::move(exporter)),
      span_(std::move(span)) {}

std::shared_ptr<TraceSpan> TraceSpan::NonRecording(const trace::TraceId& trace_id,
                                                   const trace::SpanId& parent,
                                                   std::string trace_state, uint8_t trace_flags) {
  trace::Span context;
  context.trace_id = trace_id;
  context.span_id = parent;  // what a call made inside names as its parent
  context.trace_state = std::move(trace_state);
  context.flags = trace_flags & ~kSampled;
  auto span = std::make_shared<TraceSpan>(std::move(context), nullptr);
  span->recording_ = false;
  span->ended_ = true;  // nothing to export, ever
  return span;
}

TraceSpan::~TraceSpan() {
  bool open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open = !ended_;
  }
  // A span nobody ended: its work was abandoned (a bug or a lost callback);
  // still exported, so that the trace shows where.
  if (open) {
    SetError("span abandoned without an end");
    End();
  }
}

std::shared_ptr<TraceSpan> TraceSpan::StartChild(std::string name, trace::SpanKind kind) const {
  if (!recording_) return NonRecording(trace_id_, span_id_, trace_state_, trace_flags_);
  return std::make_shared<TraceSpan>(
      NewSpan(std::move(name), kind, trace_id_, span_id_, trace_state_, trace_flags_, false),
      exporter_);
}

void TraceSpan::SetAttribute(std::string key,
                             std::variant<std::string, int64_t, bool, double> value) {
  if (!recording_) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (trace::SpanAttribute& a : span_.attributes) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  span_.attributes.push_back({std::move(key), std::move(value)});
}

void TraceSpan::AddEvent(std::string name) {
  if (!recording_) return;
  std::lock_guard<std::mutex> lock(mu_);
  span_.events.push_back({std::move(name), NowUnixNs(), {}});
}

void TraceSpan::SetError(std::string message) {
  if (!recording_) return;
  std::lock_guard<std::mutex> lock(mu_);
  span_.status = trace::SpanStatus::kError;
  span_.status_message = std::move(message);
}

void TraceSpan::End() {
  trace::Span done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    span_.end_unix_ns = NowUnixNs();
    done = std::move(span_);
  }
  std::vector<trace::Span> spans;
  spans.push_back(std::move(done));
  exporter_->Export(std::move(spans));
}

std::string TraceSpan::traceparent() const {
  return trace::FormatTraceparent(trace_id_, span_id_,
                                  recording_ ? trace_flags_ | kSampled : trace_flags_ & ~kSampled);
}

Tracer::Tracer(TracingOptions options, std::shared_ptr<trace::SpanExporter> exporter)
    : options_(options), exporter_(std::move(exporter)), count_left_(options.count) {}

bool Tracer::SampleNewTrace() {
  if (options_.rate == 0) return false;
  if (requests_.fetch_add(1, std::memory_order_relaxed) % options_.rate != 0) return false;
  int64_t left = count_left_.load(std::memory_order_relaxed);
  for (;;) {
    if (left == 0) return false;
    if (left < 0) return true;
    if (count_left_.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) return true;
  }
}

std::shared_ptr<TraceSpan> Tracer::StartServerSpan(
    std::string name, const std::vector<std::string_view>& traceparents,
    const std::vector<std::string_view>& tracestates) {
  if (std::optional<trace::TraceContext> context =
          trace::ExtractTraceContext(traceparents, tracestates)) {
    // The caller's trace: the trace id, its `random` bit and tracestate go
    // on unchanged; recorded only if the caller recorded it.
    if ((context->flags & kSampled) == 0) {
      return TraceSpan::NonRecording(context->trace_id, context->span_id,
                                     std::move(context->trace_state), context->flags);
    }
    return std::make_shared<TraceSpan>(
        NewSpan(std::move(name), trace::SpanKind::kServer, context->trace_id, context->span_id,
                std::move(context->trace_state), context->flags | kSampled, true),
        exporter_);
  }
  if (!SampleNewTrace()) return nullptr;
  return std::make_shared<TraceSpan>(
      NewSpan(std::move(name), trace::SpanKind::kServer, trace::NewTraceId(), trace::SpanId{}, "",
              kSampled | kRandom, false),
      exporter_);
}

std::shared_ptr<TraceSpan> Tracer::StartServerSpan(
    std::string name, const std::multimap<::grpc::string_ref, ::grpc::string_ref>& metadata) {
  std::vector<std::string_view> traceparents, tracestates;
  for (auto [it, end] = metadata.equal_range("traceparent"); it != end; ++it) {
    traceparents.emplace_back(it->second.data(), it->second.size());
  }
  for (auto [it, end] = metadata.equal_range("tracestate"); it != end; ++it) {
    tracestates.emplace_back(it->second.data(), it->second.size());
  }
  return StartServerSpan(std::move(name), traceparents, tracestates);
}

void ExposeExporterMetrics(MetricsRegistry& metrics, const std::string& prefix,
                           const trace::OtlpExporter& exporter) {
  Counter& exported =
      metrics.counter(prefix + "_trace_spans_exported_total", "Spans the OTLP collector accepted");
  Counter& dropped = metrics.counter(
      prefix + "_trace_spans_dropped_total",
      "Spans lost: export queue full, collector down or refusing, rejected, or shutdown");
  Counter& failures = metrics.counter(prefix + "_trace_export_failures_total",
                                      "Span batches given up after retries or a refusal");
  Gauge& queued =
      metrics.gauge(prefix + "_trace_spans_queued", "Spans waiting in the export queue");
  metrics.AddRenderHook([&exporter, &exported, &dropped, &failures, &queued] {
    trace::OtlpExporterStats s = exporter.stats();
    exported.Set(static_cast<double>(s.exported_spans));
    dropped.Set(static_cast<double>(s.dropped_spans));
    failures.Set(static_cast<double>(s.failed_exports));
    queued.Set(static_cast<double>(s.queued_spans));
  });
}

}  // namespace inferd::middleman
