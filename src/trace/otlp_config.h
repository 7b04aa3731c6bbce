// The OTLP exporter's options for a process started with `--trace-config`
// (TraceConfig, trace_config.h): the one mapping inferd and infer-gateway
// share.
//
// Order: the OpenTelemetry environment first (OtlpOptionsFromEnvironment:
// OTEL_EXPORTER_OTLP_*ENDPOINT, _HEADERS, _TIMEOUT), then what the config
// says: `url` when the flags changed it from the default, every resource
// attribute, the bsp_* sizes and delay. TraceConfig names service.name
// "inferd" unless told otherwise; a process called something else
// (infer-gateway) keeps its own name then.
//
// Threading: pure. Errors: none (the config is already validated).
#pragma once

#include <string_view>

#include "trace/otlp_options.h"
#include "trace/trace_config.h"

namespace inferd::trace {

OtlpExporterOptions OtlpOptionsFromTraceConfig(const TraceConfig& config,
                                               std::string_view service_name,
                                               const GetEnv& getenv = GetEnv());

}  // namespace inferd::trace
