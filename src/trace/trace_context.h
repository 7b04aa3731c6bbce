// W3C Trace Context (https://www.w3.org/TR/trace-context/): the
// `traceparent` and `tracestate` headers (HTTP) / metadata (gRPC) that make
// the spans of one request in several processes one trace.
//
// Parsing follows the spec's processing model: an invalid traceparent
// (wrong length, upper-case or non-hex digits, all-zero ids, version ff,
// trailing data after a version-00 value) is ignored and the receiver
// starts a new trace; tracestate is kept only with a valid traceparent,
// and invalid tracestate members are dropped without invalidating the
// traceparent. Higher versions are read leniently and re-emitted as 00.
//
// Threading: pure functions; NewTraceId/NewSpanId use a thread-local
// generator. Errors: parse results are std::nullopt, never exceptions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/span.h"

namespace inferd::trace {

struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};   // the caller's span: the parent of the spans we start
  uint8_t flags = 0;  // bit 0x01 sampled, 0x02 random
  std::string trace_state;
};

// `traceparent` header value (surrounding spaces/tabs tolerated) → context,
// or nullopt when invalid. `trace_state` is filled by ParseTraceState.
std::optional<TraceContext> ParseTraceparent(std::string_view value);

// The tracestate header value(s) (several fields joined with ',') with
// invalid members and duplicate keys (all but the left-most) dropped; ""
// when nothing valid remains or more than 32 valid members (an invalid
// header, discarded whole as the W3C conformance tests expect).
std::string ParseTraceState(std::string_view value);

// The context of a request from all its `traceparent` and `tracestate`
// header fields (or gRPC metadata entries), in arrival order: none or two
// or more traceparents, or an invalid one → nullopt (start a new trace;
// tracestate discarded); the tracestate fields are joined with ',' and
// parsed as above.
std::optional<TraceContext> ExtractTraceContext(const std::vector<std::string_view>& traceparents,
                                                const std::vector<std::string_view>& tracestates);

// "00-<32 hex>-<16 hex>-<2 hex>", lower case.
std::string FormatTraceparent(const TraceId& trace_id, const SpanId& span_id, uint8_t flags);

// Random, never all-zero ids (the low 7 bytes of a trace id random, so the
// W3C `random` flag may be set on traces we start).
TraceId NewTraceId();
SpanId NewSpanId();

std::string ToHex(const uint8_t* bytes, size_t size);

}  // namespace inferd::trace
