// The Tracer a server process runs with, from its TraceConfig: in Triton
// mode writing the trace file (trace_file.h), in OpenTelemetry mode
// exporting spans over OTLP/HTTP (span_builder.h, otlp_exporter.h).
//
// The exporter's options: OtlpOptionsFromTraceConfig (otlp_config.h), as
// infer-gateway's.
//
// Threading: call once at start-up. At shutdown call Tracer::Close() once
// no request is in flight (ends the file, sends queued spans, bounded by
// the exporter's timeout).
#pragma once

#include <memory>
#include <string_view>

#include "trace/tracer.h"

namespace inferd::trace {

std::shared_ptr<Tracer> MakeServerTracer(const TraceConfig& config, std::string_view service_name);

}  // namespace inferd::trace
