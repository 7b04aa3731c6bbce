// Tracing on the HTTP front end: the decision to trace an inference
// request (with the W3C context of its `traceparent` / `tracestate`
// headers in OpenTelemetry mode) and its HTTP_RECV_* stamps. The trace
// extension's handler (HttpApi::TraceSetting) is in http_trace.cc too.
//
// Threading: called on an I/O thread; the trace is then shared with the
// request and the response sink (trace/request_trace.h).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "frontend/http/http_types.h"
#include "trace/request_trace.h"
#include "trace/tracer.h"

namespace inferd::http {

// The W3C context of `req`: exactly one valid traceparent header (else
// none: the request starts a new trace), with its tracestate headers.
std::optional<trace::TraceContext> HttpTraceContext(const HttpRequest& req);

// A trace for an inference request on `model`, stamped HTTP_RECV_START
// (the request's first bytes) and HTTP_RECV_END (now), or null when the
// tracer does not sample it. Call only when tracer.Active().
std::shared_ptr<trace::RequestTrace> SampleHttpRequest(trace::Tracer& tracer,
                                                       const HttpRequest& req,
                                                       const std::string& model);

}  // namespace inferd::http
