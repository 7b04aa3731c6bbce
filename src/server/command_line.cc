#include "server/command_line.h"

#include <strings.h>

#include <charconv>
#include <climits>
#include <functional>
#include <map>

#include "metrics/model_metrics.h"

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

}  // namespace

std::string CommandLineUsage() {
  return R"(Usage: inferd --model-repository=<path> [options]

Model repository
  --model-repository=<path>      model repository (repeatable; alias --model-store)
  --model-control-mode=<mode>    none (default) | poll | explicit
  --load-model=<name>            model to load at start in explicit mode (repeatable; * = all)
  --repository-poll-secs=<s>     poll interval in poll mode (default 15)
  --strict-readiness=<bool>      ready only when every model is ready (default true)
  --exit-on-error=<bool>         exit if a model fails to load at start (default false)
  --exit-timeout-secs=<s>        on SIGTERM/SIGINT, wait this long for in-flight work (default 30)
  --drain-delay-secs=<s>         on SIGTERM, keep serving (not ready) this long before refusing
                                 new connections (default 0)
  --allow-client-shm=<bool>      let clients register shared-memory regions (default false)
  --id=<name>                    server name in metadata (default inferd)
  --backend-directory=<path>     where backend libraries libinferd_<name>.so are
                                 (default: the build's backends/ directory)

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

gRPC
  --allow-grpc=<bool>            serve KServe v2 gRPC (default true)
  --grpc-address=<addr>          bind address (default 0.0.0.0)
  --grpc-port=<port>             port (default 8001; 0 picks a free port)
  --grpc-max-message-size=<bytes>
                                 largest message, also after decompression (default 67108864)
  --grpc-max-concurrent-streams=<n>
                                 HTTP/2 concurrent streams per connection (default 128)
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

Logging (stderr; docs: README.md)
  --log-verbose=<n>              verbose messages up to level n (default 0: none)
  --log-info=<bool>              informational messages (default true); the "listening on"
                                 lines are printed regardless
  --log-warning=<bool>           warnings (default true)
  --log-error=<bool>             errors (default true)

  --help                         this text
)";
}

StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine cl;
  cl.server.exit_on_error = false;
  using Setter = std::function<Status(const std::string& flag, const std::string& value)>;
  auto boolean = [](bool& target) -> Setter {
    return [&target](const std::string& f, const std::string& v) {
      auto b = ParseBool(f, v);
      if (!b.ok()) return b.status();
      target = *b;
      return Status::Ok();
    };
  };
  auto integer = [](int& target, int min, int max) -> Setter {
    return [&target, min, max](const std::string& f, const std::string& v) {
      auto n = ParseInt<int>(f, v, min, max);
      if (!n.ok()) return n.status();
      target = *n;
      return Status::Ok();
    };
  };
  auto string = [](std::string& target) -> Setter {
    return [&target](const std::string&, const std::string& v) {
      target = v;
      return Status::Ok();
    };
  };
  auto size = [](size_t& target) -> Setter {
    return [&target](const std::string& f, const std::string& v) {
      auto n = ParseInt<int64_t>(f, v, 1, int64_t{1} << 30);
      if (!n.ok()) return n.status();
      target = static_cast<size_t>(*n);
      return Status::Ok();
    };
  };
  int http_port = 8000;
  int json_depth = 100;
  std::map<std::string, Setter> flags = {
      {"model-repository",
       [&](auto&, auto& v) {
         cl.server.repositories.push_back(v);
         return Status::Ok();
       }},
      {"model-store",
       [&](auto&, auto& v) {
         cl.server.repositories.push_back(v);
         return Status::Ok();
       }},
      {"model-control-mode",
       [&](const std::string& f, const std::string& v) {
         if (strcasecmp(v.c_str(), "none") == 0)
           cl.server.control_mode = ModelControlMode::kNone;
         else if (strcasecmp(v.c_str(), "poll") == 0)
           cl.server.control_mode = ModelControlMode::kPoll;
         else if (strcasecmp(v.c_str(), "explicit") == 0)
           cl.server.control_mode = ModelControlMode::kExplicit;
         else
           return InvalidArgument("--" + f + " must be none, poll or explicit, got '" + v + "'");
         return Status::Ok();
       }},
      {"load-model",
       [&](auto&, auto& v) {
         cl.server.startup_models.push_back(v);
         return Status::Ok();
       }},
      {"repository-poll-secs", integer(cl.server.repository_poll_secs, 0, 86400)},
      {"strict-readiness", boolean(cl.server.strict_readiness)},
      {"exit-on-error", boolean(cl.server.exit_on_error)},
      {"exit-timeout-secs", integer(cl.exit_timeout_secs, 0, 86400)},
      {"drain-delay-secs", integer(cl.drain_delay_secs, 0, 86400)},
      {"allow-client-shm", boolean(cl.server.allow_client_shm)},
      {"id", string(cl.server.id)},
      {"backend-directory", string(cl.server.backend_directory)},
      {"allow-http", boolean(cl.allow_http)},
      {"http-address", string(cl.http.address)},
      {"http-port", integer(http_port, 0, 65535)},
      {"http-thread-count", integer(cl.http.threads, 1, 256)},
      {"http-idle-timeout-secs", integer(cl.http.idle_timeout_secs, 1, 86400)},
      {"http-max-input-size",
       [&](const std::string& f, const std::string& v) {
         auto n = ParseInt<int64_t>(f, v, 1, int64_t{1} << 40);
         if (!n.ok()) return n.status();
         cl.http.max_body_bytes = static_cast<size_t>(*n);
         return Status::Ok();
       }},
      {"http-header-timeout-secs", integer(cl.http.header_timeout_secs, 1, 86400)},
      {"http-body-timeout-secs", integer(cl.http.body_timeout_secs, 1, 86400)},
      {"http-max-connections", integer(cl.http.max_connections, 1, 1 << 20)},
      {"http-max-json-depth", integer(json_depth, 1, 10000)},
      {"http-max-header-size",
       [&](const std::string& f, const std::string& v) {
         auto n = ParseInt<int64_t>(f, v, 1024, int64_t{1} << 30);
         if (!n.ok()) return n.status();
         cl.http.max_header_bytes = static_cast<size_t>(*n);
         return Status::Ok();
       }},
      {"http-max-chunks",
       [&](const std::string& f, const std::string& v) {
         auto n = ParseInt<int64_t>(f, v, 1, int64_t{1} << 40);
         if (!n.ok()) return n.status();
         cl.http.max_chunks = static_cast<uint64_t>(*n);
         return Status::Ok();
       }},
      {"max-request-inputs", size(cl.server.request_limits.max_inputs)},
      {"max-request-outputs", size(cl.server.request_limits.max_outputs)},
      {"max-bytes-elements",
       [&](const std::string& f, const std::string& v) {
         auto n = ParseInt<int64_t>(f, v, 1, int64_t{1} << 40);
         if (!n.ok()) return n.status();
         cl.server.request_limits.max_bytes_elements = static_cast<uint64_t>(*n);
         return Status::Ok();
       }},
      {"grpc-max-message-size", integer(cl.grpc.max_message_bytes, 1024, INT_MAX)},
      {"grpc-max-concurrent-streams", integer(cl.grpc.max_concurrent_streams, 1, INT_MAX)},
      {"grpc-idle-timeout-secs", integer(cl.grpc.idle_timeout_secs, 1, 86400)},
      {"grpc-handshake-timeout-secs", integer(cl.grpc.handshake_timeout_secs, 1, 86400)},
      {"http-use-ssl", boolean(cl.http.tls.enabled)},
      {"http-server-cert", string(cl.http.tls.cert_file)},
      {"http-server-key", string(cl.http.tls.key_file)},
      {"http-root-cert", string(cl.http.tls.root_file)},
      {"http-use-ssl-mutual", boolean(cl.http.tls.mutual)},
      {"grpc-use-ssl", boolean(cl.grpc.tls.enabled)},
      {"grpc-server-cert", string(cl.grpc.tls.cert_file)},
      {"grpc-server-key", string(cl.grpc.tls.key_file)},
      {"grpc-root-cert", string(cl.grpc.tls.root_file)},
      {"grpc-use-ssl-mutual", boolean(cl.grpc.tls.mutual)},
      {"http-restricted-api",
       [&](const std::string& f, const std::string& v) { return cl.http_restricted.Add(f, v); }},
      {"grpc-restricted-protocol",
       [&](const std::string& f, const std::string& v) { return cl.grpc.restricted.Add(f, v); }},
      {"allow-grpc", boolean(cl.allow_grpc)},
      {"grpc-address", string(cl.grpc.address)},
      {"grpc-port", integer(cl.grpc.port, 0, 65535)},
      {"grpc-keepalive-time", integer(cl.grpc.keepalive_time_ms, 1, INT_MAX)},
      {"grpc-keepalive-timeout", integer(cl.grpc.keepalive_timeout_ms, 1, INT_MAX)},
      {"grpc-keepalive-permit-without-calls", boolean(cl.grpc.keepalive_permit_without_calls)},
      {"grpc-http2-max-pings-without-data",
       integer(cl.grpc.http2_max_pings_without_data, 0, INT_MAX)},
      {"grpc-http2-min-recv-ping-interval-without-data",
       integer(cl.grpc.http2_min_recv_ping_interval_without_data_ms, 0, INT_MAX)},
      {"grpc-http2-max-ping-strikes", integer(cl.grpc.http2_max_ping_strikes, 0, INT_MAX)},
      {"allow-metrics", boolean(cl.allow_metrics)},
      {"metrics-address", string(cl.metrics_address)},
      {"metrics-port", integer(cl.metrics_port, 0, 65535)},
      {"metrics-interval-ms", integer(cl.metrics_interval_ms, 1, 3600000)},
      {"metrics-latency-buckets",
       [&](const std::string& f, const std::string& v) {
         auto b = metrics::ParseLatencyBuckets(f, v);
         if (!b.ok()) return b.status();
         cl.server.histograms.latency_buckets_s = std::move(*b);
         return Status::Ok();
       }},
      {"log-verbose", integer(cl.log.verbose, 0, 100)},
      {"log-info", boolean(cl.log.info)},
      {"log-warning", boolean(cl.log.warning)},
      {"log-error", boolean(cl.log.error)},
  };
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
    if (!has_value) {
      if (i + 1 >= args.size()) return InvalidArgument("flag '--" + name + "' needs a value");
      value = args[++i];
    }
    INFERD_RETURN_IF_ERROR(it->second(name, value));
  }
  cl.http.port = static_cast<uint16_t>(http_port);
  cl.http_max_json_depth = static_cast<size_t>(json_depth);
  if (cl.help) return cl;
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
  if (cl.metrics_address.empty()) cl.metrics_address = cl.http.address;
  return cl;
}

}  // namespace inferd
