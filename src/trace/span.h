// Span: one finished OpenTelemetry span, in the shape OTLP exports it
// (opentelemetry/proto/trace/v1/trace.proto; field meanings there). Plain
// data: built by whoever finished the work (the tracer in inferd, the
// gateway), handed by value to a SpanExporter, encoded there.
//
// Threading: none (a value). Errors: none; ids of all zeros mean "unset"
// (parent_span_id) or "invalid" (trace_id, span_id: exporters drop such
// spans and count them).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace inferd::trace {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// Span.SpanKind values (wire numbers).
enum class SpanKind : int { kUnspecified = 0, kInternal = 1, kServer = 2, kClient = 3 };
// Status.StatusCode values (wire numbers).
enum class SpanStatus : int { kUnset = 0, kOk = 1, kError = 2 };

struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t, bool, double> value;
};

struct SpanEvent {
  std::string name;
  uint64_t time_unix_ns = 0;
  std::vector<SpanAttribute> attributes;
};

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_span_id{};  // all zeros: a root span
  std::string trace_state;  // W3C tracestate, as propagated
  uint32_t flags = 0;       // W3C trace-flags in the low byte (+ remote bits)
  std::string name;
  SpanKind kind = SpanKind::kServer;
  uint64_t start_unix_ns = 0;  // wall clock (system_clock), nanoseconds
  uint64_t end_unix_ns = 0;
  std::vector<SpanAttribute> attributes;
  std::vector<SpanEvent> events;
  SpanStatus status = SpanStatus::kUnset;
  std::string status_message;
};

}  // namespace inferd::trace
