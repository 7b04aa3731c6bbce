// inferd: the inference server executable.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "core/sanitize.h"
#include "frontend/http/http_api.h"
#include "frontend/http/http_server.h"
#include "metrics/metrics_service.h"
#include "server/command_line.h"
#include "server/inference_server.h"
#ifdef INFERD_HAS_GRPC_FRONTEND
#include "frontend/grpc/grpc_server.h"
#endif

namespace {

// Blocks SIGINT/SIGTERM in every thread (set before any thread starts) so
// that the main thread can wait for them with sigwait.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace inferd;
  auto cl = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl.ok()) {
    std::cerr << "inferd: " << cl.status().message() << "\n";
    return 2;
  }
  if (cl->help) {
    std::cout << CommandLineUsage();
    return 0;
  }
  const sigset_t signals = BlockShutdownSignals();

  InferenceServer server(cl->server, BackendRegistry::WithBuiltins(cl->server.backend_directory));
  if (server.gpu_count() > 0) {
    std::cerr << "inferd: " << server.gpu_count() << " CUDA device(s)" << std::endl;
  } else {
    std::cerr << "inferd: " << server.device_memory().Unavailable() << "; serving CPU models"
              << std::endl;
  }
  Status started = server.Start();
  if (!started.ok()) {
    std::cerr << "inferd: " << started.message() << "\n";
    return 1;
  }
  // The operator's log keeps the server's paths; control characters from
  // configs or backends are escaped.
  for (const auto& e : server.RepositoryIndex(false, /*redact_paths=*/false)) {
    if (e.state == ModelState::kUnavailable) {
      std::cerr << "inferd: model '" << EscapeControl(e.name)
                << "' is UNAVAILABLE: " << EscapeControl(e.reason) << "\n";
    }
  }
  std::unique_ptr<metrics::MetricsService> metrics_service;
  if (cl->allow_metrics) {
    metrics::MetricsOptions mo;
    mo.address = cl->metrics_address;
    mo.port = static_cast<uint16_t>(cl->metrics_port);
    mo.interval_ms = cl->metrics_interval_ms;
    metrics_service = std::make_unique<metrics::MetricsService>(server, mo);
    Status s = metrics_service->Start();
    if (!s.ok()) {
      std::cerr << "inferd: " << s.message() << "\n";
      return 1;
    }
    std::cerr << "inferd: metrics listening on " << mo.address << ":" << metrics_service->port()
              << std::endl;
  }

  std::unique_ptr<http::HttpApi> api;
  std::unique_ptr<http::HttpServer> http_server;
  if (cl->allow_http) {
    http::HttpApiOptions api_options;
    api_options.max_input_size = cl->http.max_body_bytes;
    api_options.max_json_depth = cl->http_max_json_depth;
    api_options.restricted = cl->http_restricted;
    api = std::make_unique<http::HttpApi>(server, api_options);
    http_server = std::make_unique<http::HttpServer>(
        cl->http, [a = api.get()](http::HttpRequest r, std::shared_ptr<http::HttpResponder> s) {
          a->Handle(std::move(r), std::move(s));
        });
    Status s = http_server->Start();
    if (!s.ok()) {
      std::cerr << "inferd: " << s.message() << "\n";
      return 1;
    }
    std::cerr << "inferd: HTTP listening on " << cl->http.address << ":" << http_server->port()
              << std::endl;
    if (cl->http.tls.enabled) {
      std::cerr << "inferd: HTTP uses TLS" << (cl->http.tls.mutual ? " (mutual)" : "") << std::endl;
    }
  }

#ifdef INFERD_HAS_GRPC_FRONTEND
  std::unique_ptr<grpc_frontend::GrpcServer> grpc_server;
  if (cl->allow_grpc) {
    grpc_server = std::make_unique<grpc_frontend::GrpcServer>(server, cl->grpc);
    Status s = grpc_server->Start();
    if (!s.ok()) {
      std::cerr << "inferd: " << s.message() << "\n";
      return 1;
    }
    std::cerr << "inferd: gRPC listening on " << cl->grpc.address << ":" << grpc_server->port()
              << std::endl;
    if (cl->grpc.tls.enabled) {
      std::cerr << "inferd: gRPC uses TLS" << (cl->grpc.tls.mutual ? " (mutual)" : "") << std::endl;
    }
  }
#else
  // Built with INFERD_WITH_GRPC=OFF: the gRPC flags still parse (one command
  // line for every build) and have no effect.
  std::cerr << "inferd: gRPC is not served (built with INFERD_WITH_GRPC=OFF)" << std::endl;
#endif

  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "inferd: received " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", shutting down\n";
  server.BeginShutdown();
  // Readiness is false now; keep serving while balancers notice, then stop
  // accepting. The exit timeout counts from the end of the drain delay.
  if (cl->drain_delay_secs > 0) {
    std::cerr << "inferd: draining for " << cl->drain_delay_secs << " s\n";
    std::this_thread::sleep_for(std::chrono::seconds(cl->drain_delay_secs));
  }
  if (http_server) http_server->StopAccepting();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(cl->exit_timeout_secs);
  auto remaining_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
#ifdef INFERD_HAS_GRPC_FRONTEND
  if (grpc_server) {
    // Stops accepting calls, lets open streams write what they owe, waits for
    // in-flight calls until the exit timeout and cancels the rest. Models are
    // still running here, so every accepted request completes.
    grpc_server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(remaining_ms()));
  }
#endif
  bool idle = server.WaitForIdle(remaining_ms());
  if (http_server) idle = http_server->WaitForIdle(remaining_ms()) && idle;
  if (!idle) std::cerr << "inferd: exit timeout reached with requests still in flight\n";
  if (http_server) http_server->Stop();
  if (metrics_service) metrics_service->Stop();
  server.Stop();
  std::cerr << "inferd: stopped\n";
  return 0;
}
