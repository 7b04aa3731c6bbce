// infer-gateway's tracing settings from its `--trace-config` flags (the
// grammar of inferd's, trace/trace_config.h), OpenTelemetry only: tracing
// is on with `mode=opentelemetry` and a level other than OFF; `rate` and
// `count` sample the requests that carry no W3C context (those that do are
// always traced); `opentelemetry,url=` / `resource=` / `bsp_*=` configure
// the OTLP exporter, whose service.name defaults to "infer-gateway".
//
// Threading: pure. Errors: INVALID_ARGUMENT with the text for the command
// line (Triton's format errors; Triton mode, which the gateway has not).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "middleman/tracing.h"
#include "trace/otlp_options.h"
#include "trace/trace_config.h"

namespace inferd::gateway {

struct GatewayTraceSettings {
  bool enabled = false;
  middleman::TracingOptions sampling;
  trace::OtlpExporterOptions exporter;
  std::vector<std::string> warnings;  // for the log
};

// `flags.config` holds the --trace-config values in order; no flags: off.
StatusOr<GatewayTraceSettings> GatewayTraceSettingsFrom(const trace::TraceFlags& flags,
                                                        const trace::EnvLookup& env);

}  // namespace inferd::gateway
