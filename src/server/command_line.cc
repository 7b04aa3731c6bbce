#include "server/command_line.h"

#include <strings.h>

#include <charconv>
#include <climits>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "metrics/model_metrics.h"
#include "repository/residency_policy.h"

namespace inferd {
namespace {

StatusOr<bool> ParseBool(const std::string& flag, const std::string& v) {
  for (const char* t : {"true", "on", "1"}) {
    if (strcasecmp(v.c_str(), t) == 0) return true;
  }
  for (const char* f : {"false", "off", "0"}) {
    if (strcasecmp(v.c_str(), f) == 0) return false;
  }
  return InvalidArgument("--" + flag + " expects a boolean (true/false), got '" + v + "'");
}

template <typename T>
StatusOr<T> ParseInt(const std::string& flag, const std::string& v, T min, T max) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min || out > max) {
    return InvalidArgument("--" + flag + " expects an integer between " + std::to_string(min) +
                           " and " + std::to_string(max) + ", got '" + v + "'");
  }
  return out;
}

using Setter = std::function<Status(const std::string& flag, const std::string& value)>;

// Setters of the flag table: each parses the value into `target`, which
// must outlive the table.
Setter Boolean(bool& target) {
  return [&target](const std::string& f, const std::string& v) {
    auto b = ParseBool(f, v);
    if (!b.ok()) return b.status();
    target = *b;
    return Status::Ok();
  };
}

// An integer in [min, max], stored as T (which holds that range).
template <typename T>
Setter Integer(T& target, int64_t min, int64_t max) {
  return [&target, min, max](const std::string& f, const std::string& v) {
    auto n = ParseInt<int64_t>(f, v, min, max);
    if (!n.ok()) return n.status();
    target = static_cast<T>(*n);
    return Status::Ok();
  };
}

Setter String(std::string& target) {
  return [&target](const std::string&, const std::string& v) {
    target = v;
    return Status::Ok();
  };
}

// A flag whose value is parsed later (with others): kept as given.
Setter Optional(std::optional<std::string>& target) {
  return [&target](const std::string&, const std::string& v) {
    target = v;
    return Status::Ok();
  };
}

// A repeatable flag: each occurrence adds one value.
Setter Append(std::vector<std::string>& target) {
  return [&target](const std::string&, const std::string& v) {
    target.push_back(v);
    return Status::Ok();
  };
}

// --exit-on-error: given as false, it also lets the server start while a
// repository cannot be listed (ServerOptions::retry_unlisted_repositories);
// the default (false) does not, so that a deployment's mistake still stops
// the server.
Setter ExitOnError(ServerOptions& target) {
  return [&target](const std::string& f, const std::string& v) {
    auto b = ParseBool(f, v);
    if (!b.ok()) return b.status();
    target.exit_on_error = *b;
    target.retry_unlisted_repositories = !*b;
    return Status::Ok();
  };
}

Setter S3Addressing(bool& virtual_hosted) {
  return [&virtual_hosted](const std::string& f, const std::string& v) {
    if (strcasecmp(v.c_str(), "path") == 0) {
      virtual_hosted = false;
    } else if (strcasecmp(v.c_str(), "virtual") == 0) {
      virtual_hosted = true;
    } else {
      return InvalidArgument("--" + f + " must be path or virtual, got '" + v + "'");
    }
    return Status::Ok();
  };
}

Setter ControlMode(ModelControlMode& target) {
  return [&target](const std::string& f, const std::string& v) {
    if (strcasecmp(v.c_str(), "none") == 0)
      target = ModelControlMode::kNone;
    else if (strcasecmp(v.c_str(), "poll") == 0)
      target = ModelControlMode::kPoll;
    else if (strcasecmp(v.c_str(), "explicit") == 0)
      target = ModelControlMode::kExplicit;
    else
      return InvalidArgument("--" + f + " must be none, poll or explicit, got '" + v + "'");
    return Status::Ok();
  };
}

// --log-format: the names of core/log.h (json is inferd's own).
Setter LogFormatFlag(LogFormat& target) {
  return [&target](const std::string& f, const std::string& v) {
    auto format = ParseLogFormat(v);
    if (!format)
      return InvalidArgument("--" + f + " must be default, ISO8601 or json, got '" + v + "'");
    target = *format;
    return Status::Ok();
  };
}

Setter LatencyBuckets(std::vector<double>& target) {
  return [&target](const std::string& f, const std::string& v) {
    auto b = metrics::ParseLatencyBuckets(f, v);
    if (!b.ok()) return b.status();
    target = std::move(*b);
    return Status::Ok();
  };
}

// --rate-limit=off|execution_count (case-insensitive).
Setter RateLimitMode(bool& target) {
  return [&target](const std::string& f, const std::string& v) {
    if (strcasecmp(v.c_str(), "off") == 0) {
      target = false;
    } else if (strcasecmp(v.c_str(), "execution_count") == 0) {
      target = true;
    } else {
      return InvalidArgument("--" + f + " must be off or execution_count, got '" + v + "'");
    }
    return Status::Ok();
  };
}

// --model-memory-budget: bytes with an optional K/M/G/T suffix.
Setter ByteSize(uint64_t& target) {
  return [&target](const std::string& f, const std::string& v) {
    auto n = ParseByteSize(f, v);
    if (!n.ok()) return n.status();
    target = *n;
    return Status::Ok();
  };
}

// --rate-limit-resource=<name>:<count>[:<device>] (repeatable).
Setter RateLimitResourceFlag(std::vector<RateLimitResourceOverride>& target) {
  return [&target](const std::string&, const std::string& v) {
    auto r = ParseRateLimitResource(v);
    if (!r.ok()) return r.status();
    target.push_back(std::move(*r));
    return Status::Ok();
  };
}

// --model-residency: the one policy there is.
Setter ResidencyPolicy() {
  return [](const std::string& f, const std::string& v) {
    if (strcasecmp(v.c_str(), "lru") == 0) return Status::Ok();
    return InvalidArgument("--" + f + " must be lru, got '" + v + "'");
  };
}

// --cpu-set=none|auto|<cpulist> (core/cpu_set.h).
Setter CpuSetFlag(CpuSetChoice& target) {
  return [&target](const std::string&, const std::string& v) {
    auto choice = ParseCpuSetFlag(v);
    if (!choice.ok()) return choice.status();
    target = std::move(*choice);
    return Status::Ok();
  };
}

Setter Restricted(RestrictedApis& target) {
  return [&target](const std::string& f, const std::string& v) { return target.Add(f, v); };
}

// Model residency's flags (docs/residency.md), added to `table`.
void AddResidencyFlags(ServerOptions& s, std::map<std::string, Setter>& table) {
  table.emplace("model-memory-budget", ByteSize(s.model_memory_budget));
  table.emplace("model-residency", ResidencyPolicy());
  table.emplace("model-pin", Append(s.model_pins));
  table.emplace("model-residency-evict-explicit", Boolean(s.model_residency_evict_explicit));
}

// The log's flags (core/log.h, docs/logging.md), added to `table`.
void AddLogFlags(LogSettings& log, std::map<std::string, Setter>& table) {
  table.emplace("log-verbose", Integer(log.verbose, 0, 100));
  table.emplace("log-info", Boolean(log.info));
  table.emplace("log-warning", Boolean(log.warning));
  table.emplace("log-error", Boolean(log.error));
  table.emplace("log-format", LogFormatFlag(log.format));
  table.emplace("log-file", String(log.file));
}

// The HTTP API's own flags and the restricted-API rules of both front ends.
void AddApiFlags(CommandLine& cl, std::map<std::string, Setter>& table) {
  table.emplace("http-max-json-depth", Integer(cl.http_max_json_depth, 1, 10000));
  table.emplace("status-page", Boolean(cl.status_page));
  table.emplace("http-restricted-api", Restricted(cl.http_restricted));
  table.emplace("grpc-restricted-protocol", Restricted(cl.grpc.restricted));
}

// Tracing's flags (docs/tracing.md), parsed together in CheckAndDerive.
void AddTraceFlags(trace::TraceFlags& t, std::map<std::string, Setter>& table) {
  table.emplace("trace-config", Append(t.config));
  table.emplace("trace-level", Append(t.level));
  table.emplace("trace-rate", Optional(t.rate));
  table.emplace("trace-count", Optional(t.count));
  table.emplace("trace-file", Optional(t.file));
  table.emplace("trace-log-frequency", Optional(t.log_frequency));
}

// Every flag (without "--") and where it goes in `cl`, which must outlive
// the table.
std::map<std::string, Setter> FlagTable(CommandLine& cl) {
  ServerOptions& s = cl.server;
  std::map<std::string, Setter> table = {
      {"model-repository", Append(s.repositories)},
      {"model-store", Append(s.repositories)},
      {"model-control-mode", ControlMode(s.control_mode)},
      {"load-model", Append(s.startup_models)},
      {"repository-poll-secs", Integer(s.repository_poll_secs, 0, 86400)},
      {"model-unload-delay-secs", Integer(s.model_unload_delay_secs, 0, 86400)},
      {"repository-follow-external-symlinks", Boolean(s.follow_external_symlinks)},
      {"disable-auto-complete-config", Boolean(s.disable_auto_complete_config)},
      {"strict-readiness", Boolean(s.strict_readiness)},
      {"model-cache-dir", String(s.model_cache_dir)},
      {"s3-addressing", S3Addressing(s.s3_virtual_hosted)},
      {"exit-on-error", ExitOnError(s)},
      {"exit-timeout-secs", Integer(cl.exit_timeout_secs, 0, 86400)},
      {"drain-delay-secs", Integer(cl.drain_delay_secs, 0, 86400)},
      {"allow-client-shm", Boolean(s.allow_client_shm)},
      {"id", String(s.id)},
      {"backend-directory", String(s.backend_directory)},
      {"cpu-set", CpuSetFlag(cl.cpu_set)},
      {"allow-http", Boolean(cl.allow_http)},
      {"http-address", String(cl.http.address)},
      {"http-port", Integer(cl.http.port, 0, 65535)},
      {"http-thread-count", Integer(cl.http.threads, 1, 256)},
      {"http-idle-timeout-secs", Integer(cl.http.idle_timeout_secs, 1, 86400)},
      {"http-max-input-size", Integer(cl.http.max_body_bytes, 1, int64_t{1} << 40)},
      {"http-header-timeout-secs", Integer(cl.http.header_timeout_secs, 1, 86400)},
      {"http-body-timeout-secs", Integer(cl.http.body_timeout_secs, 1, 86400)},
      {"http-max-connections", Integer(cl.http.max_connections, 1, 1 << 20)},
      {"http-max-header-size", Integer(cl.http.max_header_bytes, 1024, int64_t{1} << 30)},
      {"http-max-chunks", Integer(cl.http.max_chunks, 1, int64_t{1} << 40)},
      {"max-request-inputs", Integer(s.request_limits.max_inputs, 1, int64_t{1} << 30)},
      {"max-request-outputs", Integer(s.request_limits.max_outputs, 1, int64_t{1} << 30)},
      {"max-bytes-elements", Integer(s.request_limits.max_bytes_elements, 1, int64_t{1} << 40)},
      {"grpc-max-message-size", Integer(cl.grpc.max_message_bytes, 1024, INT_MAX)},
      {"grpc-max-concurrent-streams", Integer(cl.grpc.max_concurrent_streams, 1, INT_MAX)},
      {"grpc-max-connections", Integer(cl.grpc.max_connections, 0, 1 << 20)},
      {"grpc-idle-timeout-secs", Integer(cl.grpc.idle_timeout_secs, 1, 86400)},
      {"grpc-handshake-timeout-secs", Integer(cl.grpc.handshake_timeout_secs, 1, 86400)},
      {"http-use-ssl", Boolean(cl.http.tls.enabled)},
      {"http-server-cert", String(cl.http.tls.cert_file)},
      {"http-server-key", String(cl.http.tls.key_file)},
      {"http-root-cert", String(cl.http.tls.root_file)},
      {"http-use-ssl-mutual", Boolean(cl.http.tls.mutual)},
      {"grpc-use-ssl", Boolean(cl.grpc.tls.enabled)},
      {"grpc-server-cert", String(cl.grpc.tls.cert_file)},
      {"grpc-server-key", String(cl.grpc.tls.key_file)},
      {"grpc-root-cert", String(cl.grpc.tls.root_file)},
      {"grpc-use-ssl-mutual", Boolean(cl.grpc.tls.mutual)},
      {"allow-grpc", Boolean(cl.allow_grpc)},
      {"grpc-address", String(cl.grpc.address)},
      {"grpc-port", Integer(cl.grpc.port, 0, 65535)},
      {"grpc-keepalive-time", Integer(cl.grpc.keepalive_time_ms, 1, INT_MAX)},
      {"grpc-keepalive-timeout", Integer(cl.grpc.keepalive_timeout_ms, 1, INT_MAX)},
      {"grpc-keepalive-permit-without-calls", Boolean(cl.grpc.keepalive_permit_without_calls)},
      {"grpc-http2-max-pings-without-data",
       Integer(cl.grpc.http2_max_pings_without_data, 0, INT_MAX)},
      {"grpc-http2-min-recv-ping-interval-without-data",
       Integer(cl.grpc.http2_min_recv_ping_interval_without_data_ms, 0, INT_MAX)},
      {"grpc-http2-max-ping-strikes", Integer(cl.grpc.http2_max_ping_strikes, 0, INT_MAX)},
      {"allow-metrics", Boolean(cl.allow_metrics)},
      {"metrics-address", String(cl.metrics_address)},
      {"metrics-port", Integer(cl.metrics_port, 0, 65535)},
      {"metrics-interval-ms", Integer(cl.metrics_interval_ms, 1, 3600000)},
      {"metrics-latency-buckets", LatencyBuckets(s.histograms.latency_buckets_s)},
      {"cache-config", Append(cl.cache_config)},
      {"response-cache-byte-size",
       Integer(cl.response_cache_byte_size, 0, std::numeric_limits<int64_t>::max())},
      {"rate-limit", RateLimitMode(s.rate_limit)},
      {"rate-limit-resource", RateLimitResourceFlag(s.rate_limit_resources)},
  };
  AddResidencyFlags(s, table);
  AddLogFlags(cl.log, table);
  AddTraceFlags(cl.trace_flags, table);
  AddApiFlags(cl, table);
  return table;
}

// Applies `args` (--name=value or --name value) through `flags`; --help and
// -h set cl.help.
Status ApplyArgs(const std::vector<std::string>& args, const std::map<std::string, Setter>& flags,
                 CommandLine& cl) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      cl.help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return InvalidArgument("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = flags.find(name);
    if (it == flags.end()) return InvalidArgument("unknown flag '--" + name + "' (see --help)");
    // Triton's --disable-auto-complete-config takes no value.
    if (!has_value && name == "disable-auto-complete-config") {
      value = "true";
      has_value = true;
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return InvalidArgument("flag '--" + name + "' needs a value");
      value = args[++i];
    }
    INFERD_RETURN_IF_ERROR(it->second(name, value));
  }
  return Status::Ok();
}

// What must hold across flags, and the settings other flags imply.
Status CheckAndDerive(CommandLine& cl) {
  if (cl.server.repositories.empty()) {
    return InvalidArgument("--model-repository is required (see --help)");
  }
  if (!cl.server.startup_models.empty() && cl.server.control_mode != ModelControlMode::kExplicit) {
    return InvalidArgument(
        "Use of '--load-model' requires setting '--model-control-mode=explicit' as well.");
  }
  // Mutual TLS implies TLS (as in Triton).
  if (cl.http.tls.mutual) cl.http.tls.enabled = true;
  if (cl.grpc.tls.mutual) cl.grpc.tls.enabled = true;
  if (cl.server.control_mode != ModelControlMode::kPoll) cl.server.repository_poll_secs = 0;
  if (cl.server.model_memory_budget == 0 &&
      (!cl.server.model_pins.empty() || cl.server.model_residency_evict_explicit)) {
    return InvalidArgument(
        "--model-pin and --model-residency-evict-explicit need --model-memory-budget");
  }
  if (cl.metrics_address.empty()) cl.metrics_address = cl.http.address;
  auto cache_bytes = ResponseCacheCapacity(cl.cache_config, cl.response_cache_byte_size);
  if (!cache_bytes.ok()) return cache_bytes.status();
  cl.server.response_cache_bytes = *cache_bytes;
  auto trace = trace::BuildTraceConfig(cl.trace_flags, [](const char* n) { return getenv(n); });
  if (!trace.ok()) return trace.status();
  cl.trace = std::move(*trace);
  return Status::Ok();
}

}  // namespace

// NOLINTNEXTLINE(readability-function-size): the --help text, one line per flag.
std::string CommandLineUsage() {
  return R"(Usage: inferd --model-repository=<path> [options]

Model repository
  --model-repository=<path>      model repository (repeatable; alias --model-store): a
                                 directory, or s3://bucket/prefix (AWS),
                                 s3://[http://|https://]host:port/bucket/prefix (Ceph RGW, MinIO)
  --model-control-mode=<mode>    none (default) | poll | explicit
  --load-model=<name>            model to load at start in explicit mode (repeatable; * = all)
  --repository-poll-secs=<s>     poll interval in poll mode (default 15)
  --model-unload-delay-secs=<s>  a model to unload (unload API, removed from a polled
                                 repository) is UNLOADING, not ready but still serving, this
                                 long before it is unloaded (default 0: at once)
  --model-memory-budget=<bytes>  serve more models than fit: models load when a request
                                 asks for them and the least recently used idle ones are
                                 unloaded to stay within this many bytes (suffix K, M, G, T;
                                 default: off, every model loads at start; docs/residency.md)
  --model-residency=lru          the eviction policy under a budget (the only one)
  --model-pin=<name>             never evict this model; loaded at start (repeatable)
  --model-residency-evict-explicit=<bool>
                                 models loaded through the load API may be evicted too
                                 (default false)
  --repository-follow-external-symlinks=<bool>
                                 follow symbolic links (model and version directories, files)
                                 whose target lies outside every model repository (default
                                 false; links into a repository are always followed)
  --model-cache-dir=<dir>        where models of s3:// repositories are downloaded and kept
                                 across restarts (default <temp dir>/inferd-model-cache-<uid>)
  --s3-addressing=<style>        path (default: https://<endpoint>/<bucket>/<key>) or virtual
                                 (https://<bucket>.<endpoint>/<key>) requests to S3
  --strict-readiness=<bool>      ready only when every model is ready (default true)
  --disable-auto-complete-config[=<bool>]
                                 do not run Python models' auto_complete_config (Triton's
                                 flag; the config must then be complete)
  --exit-on-error=<bool>         exit if a model fails to load at start (default false); given
                                 as false, also start while a repository cannot be listed
                                 (an s3:// store unreachable) and load its models later
  --exit-timeout-secs=<s>        on SIGTERM/SIGINT, wait this long for in-flight work (default 30)
  --drain-delay-secs=<s>         on SIGTERM, keep serving (not ready) this long before refusing
                                 new connections (default 0)
  --allow-client-shm=<bool>      let clients register shared-memory regions (default false)
  --id=<name>                    server name in metadata (default inferd)
  --backend-directory=<path>     where backend libraries libinferd_<name>.so are
                                 (default: the build's backends/ directory)
  --cpu-set=<set>                CPUs to run on (docs/operations.md "CPU pinning and NUMA"):
                                 none (default: no pinning), auto (the CPUs the process may
                                 use: its cgroup cpuset, taskset) or a list such as 0-3,8;
                                 pins every thread to the set and each instance of an
                                 automatic layout to its own slice; the set's size is the
                                 "hardware threads" of layouts and default thread counts

HTTP
  --allow-http=<bool>            serve HTTP/REST (default true)
  --http-address=<addr>          bind address (default 0.0.0.0)
  --http-port=<port>             port (default 8000; 0 picks a free port)
  --http-thread-count=<n>        I/O threads (default 4)
  --http-max-input-size=<bytes>  largest request body, also after decompression (default 67108864)
  --http-idle-timeout-secs=<s>   keep-alive idle timeout: wait for a request's first byte (default 60)
  --http-header-timeout-secs=<s> read a request's header within this time (default 10)
  --http-body-timeout-secs=<s>   read a request's body within this time (default 60)
  --http-max-header-size=<bytes> largest request header (default 65536)
  --http-max-chunks=<n>          most chunks in a chunked request body (default 65536)
  --http-max-connections=<n>     most open connections; more are answered 503 (default 1024)
  --http-max-json-depth=<n>      deepest nesting of a JSON infer request's tensor data (default 100)
  --http-use-ssl=<bool>          serve HTTPS (default false)
  --http-server-cert=<path>      PEM certificate chain for HTTPS
  --http-server-key=<path>       PEM private key for HTTPS
  --http-root-cert=<path>        PEM CA certificate(s) that sign client certificates
  --http-use-ssl-mutual=<bool>   require a client certificate signed by --http-root-cert (default false)
  --status-page=<bool>           serve the status page at GET / and its JSON at GET /inferd/status
                                 (default true; docs/status_page.md)

gRPC
  --allow-grpc=<bool>            serve KServe v2 gRPC (default true)
  --grpc-address=<addr>          bind address (default 0.0.0.0)
  --grpc-port=<port>             port (default 8001; 0 picks a free port)
  --grpc-max-message-size=<bytes>
                                 largest message, also after decompression (default 67108864)
  --grpc-max-concurrent-streams=<n>
                                 HTTP/2 concurrent streams per connection (default 128)
  --grpc-max-connections=<n>     most open connections; more are closed at accept
                                 (default 0: no limit)
  --grpc-idle-timeout-secs=<s>   close a connection with no call in flight for this long
                                 (default 60; clients reconnect on their next call)
  --grpc-handshake-timeout-secs=<s>
                                 drop a connection that has not finished its TLS handshake and
                                 HTTP/2 preface within this (default 10)
  --grpc-use-ssl=<bool>          serve gRPC over TLS (default false)
  --grpc-server-cert=<path>      PEM certificate chain for gRPC TLS
  --grpc-server-key=<path>       PEM private key for gRPC TLS
  --grpc-root-cert=<path>        PEM CA certificate(s) that sign client certificates
  --grpc-use-ssl-mutual=<bool>   require a client certificate signed by --grpc-root-cert (default false)
  --grpc-keepalive-time=<ms>     keepalive ping interval (default 7200000)
  --grpc-keepalive-timeout=<ms>  keepalive ping ack timeout (default 20000)
  --grpc-keepalive-permit-without-calls=<bool>
                                 keepalive pings without calls in flight (default false)
  --grpc-http2-max-pings-without-data=<n>
                                 pings sent without data before waiting (default 2; 0 = no limit)
  --grpc-http2-min-recv-ping-interval-without-data=<ms>
                                 shortest client ping interval accepted (default 300000)
  --grpc-http2-max-ping-strikes=<n>
                                 bad pings tolerated before closing (default 2; 0 = no limit)

Restricted APIs (docs/security.md); APIs: health, metadata, inference, shared-memory,
model-config, model-repository, statistics, trace, logging
  --http-restricted-api=<api>[,<api>...]:<key>=<value>
                                 answer these APIs only to requests with header <key>: <value>
                                 (repeatable, one key per API)
  --grpc-restricted-protocol=<api>[,<api>...]:<key>=<value>
                                 the same for gRPC, metadata key triton-grpc-protocol-<key>

Request limits (both protocols; docs/security.md)
  --max-request-inputs=<n>       most inputs in one inference request (default 1024)
  --max-request-outputs=<n>      most requested outputs in one inference request (default 1024)
  --max-bytes-elements=<n>       most elements in one BYTES tensor (default 16777216)

Metrics (Prometheus, GET /metrics; docs/metrics.md)
  --allow-metrics=<bool>         serve metrics (default true)
  --metrics-address=<addr>       bind address (default: the HTTP address)
  --metrics-port=<port>          port (default 8002; 0 picks a free port)
  --metrics-interval-ms=<ms>     CPU/RAM/GPU gauge refresh interval (default 2000)
  --metrics-latency-buckets=<s,s,...>
                                 latency histogram bucket bounds, seconds, ascending
                                 (default 0.00005,0.0001,0.00025,...,2.5,5,10)

Response cache (docs/response_cache.md)
  --cache-config=local,size=<bytes>
                                 an in-process cache of this many bytes for the responses of
                                 models with response_cache { enable: true } (Triton's flag;
                                 only the local cache)
  --response-cache-byte-size=<bytes>
                                 deprecated (Triton's) form of --cache-config local,size=<bytes>;
                                 0: no cache; not together with --cache-config

Rate limiter (docs/rate_limiter.md)
  --rate-limit=<mode>            off (default: instance_group rate_limiter settings are
                                 ignored) | execution_count (an instance runs only when the
                                 resources its group declares are free; priority weights turns)
  --rate-limit-resource=<name>:<count>[:<device>]
                                 copies of a resource, on every device or on one (repeatable;
                                 the device is ignored for global resources; default: the
                                 largest count a loaded instance asks for)

Tracing (docs/tracing.md)
  --trace-config=[<mode>,]<setting>=<value>
                                 (repeatable) global: level=OFF|TIMESTAMPS|TENSORS
                                 (repeatable), rate=<n> (trace every n-th request, default
                                 1000), count=<n> (traces to collect, -1 = no limit),
                                 mode=triton|opentelemetry; triton,file=<path>,
                                 triton,log-frequency=<n> (a file.<i> every n traces; 0: one
                                 file at exit); opentelemetry,url=<OTLP/HTTP url>,
                                 opentelemetry,resource=<key>=<value>,
                                 opentelemetry,bsp_max_queue_size|bsp_schedule_delay|
                                 bsp_max_export_batch_size=<n>
  --trace-file, --trace-level, --trace-rate, --trace-count, --trace-log-frequency
                                 deprecated (Triton's) forms; --trace-config wins

Logging (stderr; docs/logging.md; changed at run time through /v2/logging)
  --log-verbose=<n>              verbose messages up to level n (default 0: none); 1: model
                                 loads and unloads, start-up and shutdown steps, each
                                 inference request's path (decode, queue, batch, execution,
                                 response); 2: also every HTTP request, requested outputs and
                                 response tensors
  --log-info=<bool>              informational messages (default true); the "listening on"
                                 lines are printed regardless
  --log-warning=<bool>           warnings (default true)
  --log-error=<bool>             errors (default true)
  --log-format=<format>          default ("inferd: ..." lines), ISO8601 (the same after a UTC
                                 timestamp) or json (one JSON object per line)
  --log-file=<path>              append the log to this file instead of stderr (the
                                 "listening on" lines go to stderr too)

  --help                         this text
)";
}

StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  cl.server.exit_on_error = false;
  cl.http.port = 8000;
  cl.http_max_json_depth = 100;
  INFERD_RETURN_IF_ERROR(ApplyArgs(args, FlagTable(cl), cl));
  if (cl.help) return cl;
  INFERD_RETURN_IF_ERROR(CheckAndDerive(cl));
  return cl;
}

}  // namespace inferd
