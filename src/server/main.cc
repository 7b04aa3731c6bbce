// inferd: the inference server executable.
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "frontend/http/http_api.h"
#include "frontend/http/http_server.h"
#include "server/command_line.h"
#include "server/inference_server.h"

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

  InferenceServer server(cl->server, BackendRegistry::WithBuiltins());
  Status started = server.Start();
  if (!started.ok()) {
    std::cerr << "inferd: " << started.message() << "\n";
    return 1;
  }
  for (const auto& e : server.RepositoryIndex(false)) {
    if (e.state == "UNAVAILABLE") {
      std::cerr << "inferd: model '" << e.name << "' is UNAVAILABLE: " << e.reason << "\n";
    }
  }
  if (cl->allow_grpc)
    std::cerr << "inferd: gRPC is not served by this build (--allow-grpc ignored)\n";
  if (cl->allow_metrics)
    std::cerr << "inferd: metrics are not served by this build (--allow-metrics ignored)\n";

  std::unique_ptr<http::HttpApi> api;
  std::unique_ptr<http::HttpServer> http_server;
  if (cl->allow_http) {
    http::HttpApiOptions api_options;
    api_options.max_input_size = cl->http.max_body_bytes;
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
  }

  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "inferd: received " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", shutting down\n";
  server.BeginShutdown();
  if (http_server) http_server->StopAccepting();
  const int timeout_ms = cl->exit_timeout_secs * 1000;
  const auto start = std::chrono::steady_clock::now();
  bool idle = server.WaitForIdle(timeout_ms);
  if (http_server) {
    const int spent = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
    idle = http_server->WaitForIdle(std::max(0, timeout_ms - spent)) && idle;
  }
  if (!idle) std::cerr << "inferd: exit timeout reached with requests still in flight\n";
  if (http_server) http_server->Stop();
  server.Stop();
  std::cerr << "inferd: stopped\n";
  return 0;
}
