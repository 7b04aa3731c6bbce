// Tracing on the gRPC front end: the W3C context of a call's metadata
// (`traceparent` / `tracestate`, OpenTelemetry mode), the decision to trace
// an inference request and its GRPC_WAITREAD_* stamps. The trace
// extension's handler (InferenceService::TraceSetting) is in grpc_trace.cc.
//
// The callback API hands a handler a message already read, so both
// GRPC_WAITREAD_START and GRPC_WAITREAD_END are the handler's entry.
//
// Threading: called on gRPC's threads; the trace is then shared with the
// request and the call (trace/request_trace.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "trace/request_trace.h"
#include "trace/tracer.h"

namespace inferd::grpc_frontend {

// Exactly one valid `traceparent` entry (else none), with the `tracestate`
// entries joined.
std::optional<trace::TraceContext> GrpcTraceContext(const ::grpc::ServerContextBase& ctx);

// A trace for an inference on `model` that arrived at `received`, or null
// when not sampled. `context`: the call's W3C context (used in
// OpenTelemetry mode only). Call only when tracer.Active().
std::shared_ptr<trace::RequestTrace> SampleGrpcRequest(
    trace::Tracer& tracer, const std::optional<trace::TraceContext>& context,
    const std::string& model, std::chrono::steady_clock::time_point received);

}  // namespace inferd::grpc_frontend
