// OtlpExporterOptions: what the OTLP/HTTP exporter (otlp_exporter.h) is
// told, and the defaults the OpenTelemetry environment variables give it
// (PROTOCOL-NEXT §6.1; docs/tracing.md). Flags (--trace-config
// opentelemetry,...) are applied on top by the caller.
//
// Threading: plain data and pure functions. Errors: unreadable environment
// values are ignored (the default stays); OtlpOptionsFromEnvironment never
// fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/span.h"

namespace inferd::trace {

inline constexpr const char* kDefaultOtlpTracesUrl = "http://localhost:4318/v1/traces";

struct OtlpExporterOptions {
  std::string url = kDefaultOtlpTracesUrl;
  // Resource attributes: service.name first (the process's name unless the
  // environment or the caller says otherwise).
  std::vector<SpanAttribute> resource;
  std::string scope_name;  // the instrumentation scope; default: service.name
  std::string scope_version;
  std::vector<std::string> headers;  // extra request headers, "Name: value"

  // The batch span processor (OTEL_BSP_*).
  uint32_t max_queue_size = 2048;
  std::chrono::milliseconds schedule_delay{5000};
  uint32_t max_export_batch_size = 512;  // clamped to max_queue_size

  // One POST's limit, and Flush's/shutdown's (OTEL_EXPORTER_OTLP_TIMEOUT).
  std::chrono::milliseconds export_timeout{10000};

  // Retrying 429/502/503/504 and failed connections: at most `max_attempts`
  // POSTs of a batch, waiting initial_backoff * 2^n (capped at max_backoff,
  // with jitter) or the server's Retry-After (capped at max_retry_after)
  // between them; then the batch is dropped.
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::milliseconds max_retry_after{30000};

  // Sets resource attribute `key` (replacing an earlier value).
  void SetResource(const std::string& key, std::string value);
  // service.name's value ("" if unset).
  std::string ServiceName() const;
};

using GetEnv = std::function<const char*(const char*)>;

// Defaults for a process called `service_name` ("inferd", "infer-gateway"),
// then the environment: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/traces"); OTEL_EXPORTER_OTLP_[TRACES_]
// HEADERS and _TIMEOUT; OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE,
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE; OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME. `getenv` is injectable for tests.
OtlpExporterOptions OtlpOptionsFromEnvironment(std::string_view service_name,
                                               const GetEnv& getenv = GetEnv());

// "k1=v1,k2=v2" with percent-encoded values (the W3C Baggage form the
// OTEL_* list variables use) → pairs; malformed members are skipped.
std::vector<std::pair<std::string, std::string>> ParseOtelKeyValueList(std::string_view text);

}  // namespace inferd::trace
