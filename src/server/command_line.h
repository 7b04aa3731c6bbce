// Command-line flags of `inferd` (Triton's names where Triton has the
// flag). Flags take `--name=value` or `--name value`; booleans accept
// true/false, on/off, 1/0 in any case.
#pragma once

#include <string>
#include <vector>

#include "core/cpu_set.h"
#include "core/log.h"
#include "core/status.h"
#include "frontend/grpc/grpc_server.h"
#include "frontend/http/http_api.h"
#include "frontend/http/http_server.h"
#include "frontend/restricted_api.h"
#include "server/inference_server.h"
#include "trace/trace_config.h"

namespace inferd {

struct CommandLine {
  ServerOptions server;
  bool allow_http = true;
  http::HttpServerOptions http;
  size_t http_max_json_depth = 100;
  RestrictedApis http_restricted;  // --http-restricted-api
  bool status_page = true;         // --status-page (GET /, docs/status_page.md)
  bool allow_grpc = true;
  grpc_frontend::GrpcServer::Options grpc;  // address, port, keepalive
  bool allow_metrics = true;
  std::string metrics_address;
  int metrics_port = 8002;
  int metrics_interval_ms = 2000;  // host/GPU gauge refresh; latency buckets: server.histograms
  int exit_timeout_secs = 30;
  int drain_delay_secs = 0;  // after SIGTERM: not ready, still serving, for this long
  // --cache-config values (repeatable) and --response-cache-byte-size (-1:
  // not given), combined into server.response_cache_bytes.
  std::vector<std::string> cache_config;
  int64_t response_cache_byte_size = -1;
  LogSettings log;  // --log-verbose, -info, -warning, -error, -format, -file (core/log.h)
  // --trace-config and the deprecated --trace-* flags as given, and the
  // settings they make (trace/trace_config.h; trace.warnings to be logged).
  trace::TraceFlags trace_flags;
  trace::TraceConfig trace;
  // --cpu-set: none (default), auto or a CPU list; resolved against the
  // allowed CPUs by main (core/cpu_affinity.h).
  CpuSetChoice cpu_set;
  bool help = false;
};

// Parses argv (without argv[0]). Errors name the flag.
StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

// The --help text.
std::string CommandLineUsage();

}  // namespace inferd
