// The Tracer a server process runs with, from its TraceConfig: in Triton
// mode writing the trace file (trace_file.h), in OpenTelemetry mode
// exporting spans over OTLP/HTTP (span_builder.h, otlp_exporter.h).
//
// The exporter's options: the url of --trace-config opentelemetry,url=...
// (else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT,
// else http://localhost:4318/v1/traces), the resource attributes and the
// batch settings of the config; headers and the per-POST timeout from the
// OTEL_EXPORTER_OTLP_* environment (otlp_options.h).
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
