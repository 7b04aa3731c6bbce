#include "gateway/trace_setup.h"

#include "trace/otlp_config.h"

namespace inferd::gateway {

StatusOr<GatewayTraceSettings> GatewayTraceSettingsFrom(const trace::TraceFlags& flags,
                                                        const trace::EnvLookup& env) {
  GatewayTraceSettings out;
  if (flags.empty()) return out;
  auto config = trace::BuildTraceConfig(flags, env);
  if (!config.ok()) return config.status();
  if (config->mode != trace::TraceMode::kOpenTelemetry) {
    return InvalidArgument(
        "infer-gateway exports OpenTelemetry spans only: add --trace-config "
        "mode=opentelemetry");
  }
  out.warnings = config->warnings;
  out.enabled = config->level != trace::kTraceLevelOff;
  if (!out.enabled) {
    out.warnings.emplace_back(
        "tracing is off (trace level OFF): add --trace-config level=TIMESTAMPS to trace");
  }
  out.sampling.rate = config->rate;
  out.sampling.count = config->count;
  out.exporter = trace::OtlpOptionsFromTraceConfig(*config, "infer-gateway",
                                                   [&env](const char* name) { return env(name); });
  return out;
}

}  // namespace inferd::gateway
