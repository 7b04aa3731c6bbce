#include "trace/otlp_config.h"

#include <cstdlib>

namespace inferd::trace {

OtlpExporterOptions OtlpOptionsFromTraceConfig(const TraceConfig& config,
                                               std::string_view service_name,
                                               const GetEnv& getenv) {
  OtlpExporterOptions o = OtlpOptionsFromEnvironment(service_name, getenv);
  if (config.url != kDefaultOtlpTracesUrl) o.url = config.url;
  // Did anyone name the service? TraceConfig's own default is "inferd".
  auto env = [&getenv](const char* name) {
    const char* v = getenv ? getenv(name) : std::getenv(name);
    return std::string_view(v != nullptr ? v : "");
  };
  const bool named_by_environment =
      !env("OTEL_SERVICE_NAME").empty() ||
      env("OTEL_RESOURCE_ATTRIBUTES").find("service.name") != std::string_view::npos;
  for (const auto& [key, value] : config.resource) {
    if (key == "service.name" && value == "inferd" && service_name != "inferd" &&
        !named_by_environment) {
      continue;
    }
    o.SetResource(key, value);
  }
  o.max_queue_size = config.bsp_max_queue_size;
  o.max_export_batch_size = config.bsp_max_export_batch_size;
  o.schedule_delay = std::chrono::milliseconds(config.bsp_schedule_delay_ms);
  return o;
}

}  // namespace inferd::trace
