// The OTLP/HTTP trace bodies (PROTOCOL-NEXT §6.1-6.2), as bytes: the
// ExportTraceServiceRequest inferd POSTs and the ExportTraceServiceResponse
// a collector answers. The generated protobuf classes stay inside
// otlp_encode.cc; nothing else sees them.
//
// Threading: pure functions. Errors: DecodeExportResponse reports a body it
// cannot parse through `parsed`; encoding cannot fail.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/span.h"

namespace inferd::trace {

// What every request of one exporter carries besides its spans.
struct OtlpEnvelope {
  std::vector<SpanAttribute> resource;  // service.name, ...
  std::string scope_name;               // the instrumentation scope ("tracer")
  std::string scope_version;
};

// One ResourceSpans with one ScopeSpans holding `spans`, serialized.
// Parent ids of all zeros are sent empty (a root span).
std::string EncodeExportRequest(const OtlpEnvelope& envelope, const std::vector<Span>& spans);

struct ExportResponse {
  bool parsed = false;
  int64_t rejected_spans = 0;  // partial_success; 0 when absent
  std::string error_message;
};

// A 2xx body (an empty body is a full success).
ExportResponse DecodeExportResponse(std::string_view body);

}  // namespace inferd::trace
