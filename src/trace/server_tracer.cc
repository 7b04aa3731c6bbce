#include "trace/server_tracer.h"

#include <cstdlib>

#include "trace/otlp_exporter.h"
#include "trace/otlp_options.h"
#include "trace/span_builder.h"
#include "trace/trace_file.h"

namespace inferd::trace {
namespace {

std::shared_ptr<TraceCollector> OpenTelemetryCollector(const TraceConfig& config,
                                                       std::string_view service_name) {
  OtlpExporterOptions o =
      OtlpOptionsFromEnvironment(service_name, [](const char* n) { return std::getenv(n); });
  if (config.url != kDefaultOtlpTracesUrl) o.url = config.url;  // the flag wins over the env
  for (const auto& [key, value] : config.resource) o.SetResource(key, value);
  o.scope_name = std::string(service_name);
  o.max_queue_size = config.bsp_max_queue_size;
  o.schedule_delay = std::chrono::milliseconds(config.bsp_schedule_delay_ms);
  o.max_export_batch_size = config.bsp_max_export_batch_size;
  auto exporter = std::make_shared<OtlpExporter>(std::move(o));
  SpanCollector::ExporterHooks hooks;
  hooks.exported = [e = exporter.get()] { return e->exported(); };
  hooks.failed_exports = [e = exporter.get()] { return e->failed_exports(); };
  hooks.close = [e = exporter.get()] { e->Shutdown(); };
  return std::make_shared<SpanCollector>(std::move(exporter), std::move(hooks));
}

}  // namespace

std::shared_ptr<Tracer> MakeServerTracer(const TraceConfig& config, std::string_view service_name) {
  std::shared_ptr<TraceCollector> collector;
  if (config.mode == TraceMode::kOpenTelemetry) {
    collector = OpenTelemetryCollector(config, service_name);
  } else if (!config.file.empty()) {
    collector = std::make_shared<TraceFileWriter>(config.file);
  }
  return std::make_shared<Tracer>(config, std::move(collector));
}

}  // namespace inferd::trace
