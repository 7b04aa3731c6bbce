// infer-gateway: classifies images through inferd's image pipelines
// (docs/gateway.md). Flags are listed by --help.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "gateway/gateway.h"
#include "gateway/trace_setup.h"
#include "inferd/client/routing.h"
#include "middleman/inferd_flags.h"
#include "trace/otlp_exporter.h"

namespace {

constexpr char kUsage[] =
    "usage: infer-gateway --inferd-url HOST:GRPC_PORT [options]\n"
    "  --http-port P          HTTP port (default 8080; 0 picks a free one)\n"
    "  --http-address A       HTTP address (default 0.0.0.0)\n"
    "  --grpc-port G          gRPC port of the gateway's own service (default 8081;\n"
    "                         0 picks a free one, -1 turns it off)\n"
    "  --grpc-address A       gRPC address (default 0.0.0.0)\n"
    "  --inferd-url HOST:PORT inferd's gRPC endpoint (required); or xds:///NAME: the\n"
    "                         hosts from the xDS control plane in $GRPC_XDS_BOOTSTRAP\n"
    "                         (inferd-discovery), each call to one serving its pipeline\n"
    "  --shared-memory MODE   none (default) or system: inputs through POSIX shared memory\n"
    "                         registered with inferd (both on one host; inferd needs\n"
    "                         --allow-client-shm=true)\n"
    "  --shm-slots N          shared-memory input slots (default 16)\n"
    "  --shm-slot-bytes B     bytes per slot; larger images go inline (default 1048576)\n"
    "  --labels NAME=FILE     labels of pipeline NAME, one per line (repeatable)\n"
    "  --channels N           gRPC channels to inferd (default 4)\n"
    "  --timeout-ms T         deadline of a call to inferd without a caller's deadline\n"
    "                         (default 10000)\n"
    "  --http-threads N       HTTP I/O threads (default 2)\n"
    "  --compute-threads N    post-processing threads (default 2)\n"
    "  --default-top-k K      classes per answer without ?top_k= (default 5)\n"
    "TLS and headers to inferd (its --grpc-use-ssl, restricted protocols):\n";
constexpr char kUsageTracing[] =
    "Tracing (OpenTelemetry over OTLP/HTTP; W3C traceparent passed on to inferd):\n"
    "  --trace-config S       inferd's grammar (repeatable): mode=opentelemetry,\n"
    "                         level=TIMESTAMPS, rate=N, count=N, opentelemetry,url=URL,\n"
    "                         opentelemetry,resource=K=V, opentelemetry,bsp_*=N\n";

void PrintUsage(std::ostream& out) {
  out << kUsage << inferd::middleman::kInferdConnectionUsage << kUsageTracing;
}

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "infer-gateway: " << problem << "\n";
  PrintUsage(std::cerr);
  std::exit(2);
}

int Int(const std::string& flag, const char* value, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || v < lo || v > hi) {
    Usage(flag + " wants an integer between " + std::to_string(lo) + " and " + std::to_string(hi) +
          ", got '" + value + "'");
  }
  return static_cast<int>(v);
}

// Everything the command line sets.
struct Flags {
  inferd::middleman::ServiceOptions service;
  inferd::middleman::InferdPoolOptions pool;
  inferd::middleman::InferdConnectionFlags inferd_connection;
  inferd::gateway::GatewayOptions gateway;
  std::string shm = "none";
  inferd::middleman::ShmPoolOptions shm_options;
  inferd::trace::TraceFlags trace;
};

// Applies one flag and its value to `f`; false if the flag is unknown. Bad
// values end the process through Usage.
bool ApplyFlag(const std::string& flag, const char* v, Flags& f) {
  if (flag == "--http-port") {
    f.service.http_port = static_cast<uint16_t>(Int(flag, v, 0, 65535));
  } else if (flag == "--http-address") {
    f.service.http_address = v;
  } else if (flag == "--grpc-port") {
    f.service.grpc_port = Int(flag, v, -1, 65535);
  } else if (flag == "--grpc-address") {
    f.service.grpc_address = v;
  } else if (flag == "--inferd-url") {
    f.pool.url = v;
  } else if (flag == "--shared-memory") {
    f.shm = v;
    if (f.shm != "none" && f.shm != "system") Usage("--shared-memory wants none or system");
  } else if (flag == "--shm-slots") {
    f.shm_options.slots = Int(flag, v, 1, 4096);
  } else if (flag == "--shm-slot-bytes") {
    f.shm_options.slot_bytes = static_cast<size_t>(Int(flag, v, 64, 1 << 30));
  } else if (flag == "--labels") {
    inferd::Status s = f.gateway.labels.Add(v);
    if (!s.ok()) Usage(s.message());
  } else if (flag == "--channels") {
    f.pool.channels = Int(flag, v, 1, 256);
  } else if (flag == "--timeout-ms") {
    f.pool.default_timeout = std::chrono::milliseconds(Int(flag, v, 1, 3600000));
  } else if (flag == "--http-threads") {
    f.service.http_threads = Int(flag, v, 1, 256);
  } else if (flag == "--compute-threads") {
    f.service.compute_threads = Int(flag, v, 1, 256);
  } else if (flag == "--trace-config") {
    f.trace.config.emplace_back(v);
  } else if (flag == "--default-top-k") {
    f.gateway.default_top_k = static_cast<uint32_t>(Int(flag, v, 1, 1000));
  } else {
    return false;
  }
  return true;
}

// Reads the command line into `f`; false when --help printed the usage. A
// bad command line ends the process through Usage.
bool ParseFlags(int argc, char** argv, Flags& f) {
  f.service.name = "gateway";
  f.service.http_port = 8080;
  f.service.grpc_port = 8081;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      PrintUsage(std::cout);
      return false;
    }
    if (flag == "--inferd-ssl") {
      f.inferd_connection.tls = true;
      continue;
    }
    if (i + 1 >= argc) Usage("missing value after " + flag);
    auto connection = inferd::middleman::ApplyInferdConnectionFlag(flag, argv[i + 1],
                                                                   f.inferd_connection, f.pool);
    if (!connection.ok()) Usage(connection.status().message());
    if (*connection) {
      ++i;
      continue;
    }
    if (!ApplyFlag(flag, argv[++i], f)) Usage("unknown flag " + flag);
  }
  if (f.pool.url.empty()) Usage("--inferd-url is required");
  // Regions are registered with one inferd; an xds: target spreads calls.
  if (f.shm == "system" && inferd::client::IsXdsTarget(f.pool.url))
    Usage("--shared-memory system needs one inferd on this host, not an xds: target");
  const inferd::Status tls =
      inferd::middleman::FinishInferdConnectionFlags(f.inferd_connection, f.pool);
  if (!tls.ok()) Usage(tls.message());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace inferd;
  middleman::Service::BlockShutdownSignals();
  Flags f;
  if (!ParseFlags(argc, argv, f)) return 0;
  const middleman::ServiceOptions& so = f.service;
  const middleman::InferdPoolOptions& po = f.pool;

  auto tracing = gateway::GatewayTraceSettingsFrom(
      f.trace, [](const char* name) -> const char* { return std::getenv(name); });
  if (!tracing.ok()) Usage(tracing.status().message());
  for (const std::string& w : tracing->warnings)
    std::cerr << "infer-gateway: warning: " << w << "\n";

  middleman::Service service(so);
  // Shut down (the last spans sent, bounded by the export timeout) after
  // the service has stopped answering; destroyed before it.
  std::shared_ptr<trace::OtlpExporter> exporter;
  std::unique_ptr<middleman::Tracer> tracer;
  if (tracing->enabled) {
    exporter = std::make_shared<trace::OtlpExporter>(tracing->exporter);
    tracer = std::make_unique<middleman::Tracer>(tracing->sampling, exporter);
    service.SetTracer(tracer.get());
    middleman::ExposeExporterMetrics(service.metrics(), so.name, *exporter);
  }
  middleman::InferdPool pool(po, &service.metrics());
  std::unique_ptr<middleman::ShmPool> shm_pool;
  if (f.shm == "system") {
    auto created = middleman::ShmPool::Create(f.shm_options, pool, &service.metrics());
    if (!created.ok()) {
      std::cerr << "infer-gateway: " << created.status().message() << "\n";
      return 1;
    }
    shm_pool = std::move(*created);
    f.gateway.shm = shm_pool.get();
  }
  gateway::Gateway gateway(service, pool, std::move(f.gateway));
  Status s = service.Start();
  if (!s.ok()) {
    std::cerr << "infer-gateway: " << s.message() << "\n";
    return 1;
  }
  if (shm_pool) shm_pool->Register();  // inferd may not be up yet: Acquire retries
  std::cerr << "infer-gateway: forwarding to inferd at " << po.url
            << (po.credentials ? " over TLS" : "")
            << (shm_pool ? " (inputs through system shared memory)" : "") << "\n";
  if (service.grpc_port() >= 0) {
    std::cerr << "infer-gateway: gRPC listening on " << so.grpc_address << ":"
              << service.grpc_port() << "\n";
  }
  if (exporter) {
    std::cerr << "infer-gateway: exporting spans to " << exporter->options().url << " as "
              << exporter->options().ServiceName() << "\n";
  }
  std::cerr << "infer-gateway: HTTP listening on " << so.http_address << ":" << service.http_port()
            << std::endl;
  const int sig = middleman::Service::WaitForShutdownSignal();
  std::cerr << "infer-gateway: " << strsignal(sig) << ", stopping\n";
  service.Stop();
  // Calls still in flight (their clients left) end before the shared-memory
  // slots they may use go away with shm_pool.
  pool.Shutdown();
  // The spans of the last requests, sent within the export timeout.
  if (exporter) exporter->Shutdown();
  return 0;
}
