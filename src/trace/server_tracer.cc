#include "trace/server_tracer.h"

#include "trace/otlp_config.h"
#include "trace/otlp_exporter.h"
#include "trace/span_builder.h"
#include "trace/trace_file.h"

namespace inferd::trace {
namespace {

std::shared_ptr<TraceCollector> OpenTelemetryCollector(const TraceConfig& config,
                                                       std::string_view service_name) {
  auto exporter = std::make_shared<OtlpExporter>(OtlpOptionsFromTraceConfig(config, service_name));
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
