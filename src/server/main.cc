// inferd: the inference server executable.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "core/cpu_affinity.h"
#include "core/log.h"
#include "core/sanitize.h"
#include "frontend/http/http_api.h"
#include "frontend/http/http_server.h"
#include "metrics/metrics_service.h"
#include "repository/repository_source_factory.h"
#include "server/command_line.h"
#include "server/inference_server.h"
#include "trace/server_tracer.h"
#ifdef INFERD_HAS_GRPC_FRONTEND
#include "frontend/grpc/grpc_server.h"
#endif

namespace inferd {
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

// The services around the server. Destroyed in reverse order (gRPC, HTTP,
// the API, metrics), before the InferenceServer they use.
struct Services {
  std::unique_ptr<metrics::MetricsService> metrics;
  std::unique_ptr<http::HttpApi> api;
  std::unique_ptr<http::HttpServer> http;
#ifdef INFERD_HAS_GRPC_FRONTEND
  std::unique_ptr<grpc_frontend::GrpcServer> grpc;
#endif
};

const char* ControlModeName(ModelControlMode mode) {
  switch (mode) {
    case ModelControlMode::kNone:
      break;
    case ModelControlMode::kPoll:
      return "poll";
    case ModelControlMode::kExplicit:
      return "explicit";
  }
  return "none";
}

void LogStartupSettings(const CommandLine& cl, const InferenceServer& server) {
  for (const auto& r : cl.server.repositories) {
    INFERD_VLOG(1) << "model repository: " << EscapeControl(r);
  }
  INFERD_VLOG(1) << "model control mode: " << ControlModeName(cl.server.control_mode);
  if (server.gpu_count() > 0) {
    INFERD_LOG(Info) << server.gpu_count() << " CUDA device(s)";
  } else {
    INFERD_LOG(Info) << server.device_memory().Unavailable() << "; serving CPU models";
  }
}

// The outcome of the start-up loads, from the repository index. The
// operator's log keeps the server's paths; control characters from configs
// or backends are escaped.
void LogModelStates(const InferenceServer& server) {
  for (const auto& e : server.RepositoryIndex(false, /*redact_paths=*/false)) {
    if (e.state == ModelState::kUnavailable) {
      INFERD_LOG(Warning) << "model '" << EscapeControl(e.name)
                          << "' is UNAVAILABLE: " << EscapeControl(e.reason);
    } else {
      INFERD_VLOG(1) << "model '" << EscapeControl(e.name) << "'"
                     << (e.version ? " version " + std::to_string(*e.version) : "") << " is "
                     << ModelStateName(e.state);
    }
  }
}

Status StartMetrics(const CommandLine& cl, InferenceServer& server, Services& s) {
  metrics::MetricsOptions mo;
  mo.address = cl.metrics_address;
  mo.port = static_cast<uint16_t>(cl.metrics_port);
  mo.interval_ms = cl.metrics_interval_ms;
  s.metrics = std::make_unique<metrics::MetricsService>(server, mo);
  INFERD_RETURN_IF_ERROR(s.metrics->Start());
  LogAlways("metrics listening on " + mo.address + ":" + std::to_string(s.metrics->port()));
  return Status::Ok();
}

Status StartHttp(const CommandLine& cl, InferenceServer& server, Services& s) {
  http::HttpApiOptions api_options;
  api_options.max_input_size = cl.http.max_body_bytes;
  api_options.max_json_depth = cl.http_max_json_depth;
  api_options.restricted = cl.http_restricted;
  api_options.status_page = cl.status_page;
  s.api = std::make_unique<http::HttpApi>(server, api_options);
  s.http = std::make_unique<http::HttpServer>(
      cl.http,
      [a = s.api.get()](http::HttpRequest r, const std::shared_ptr<http::HttpResponder>& out) {
        a->Handle(std::move(r), out);
      });
  INFERD_RETURN_IF_ERROR(s.http->Start());
  LogAlways("HTTP listening on " + cl.http.address + ":" + std::to_string(s.http->port()));
  if (cl.http.tls.enabled) {
    INFERD_LOG(Info) << "HTTP uses TLS" << (cl.http.tls.mutual ? " (mutual)" : "");
  }
  return Status::Ok();
}

Status StartGrpc([[maybe_unused]] const CommandLine& cl, [[maybe_unused]] InferenceServer& server,
                 [[maybe_unused]] Services& s) {
#ifdef INFERD_HAS_GRPC_FRONTEND
  if (!cl.allow_grpc) return Status::Ok();
  s.grpc = std::make_unique<grpc_frontend::GrpcServer>(server, cl.grpc);
  INFERD_RETURN_IF_ERROR(s.grpc->Start());
  LogAlways("gRPC listening on " + cl.grpc.address + ":" + std::to_string(s.grpc->port()));
  if (cl.grpc.tls.enabled) {
    INFERD_LOG(Info) << "gRPC uses TLS" << (cl.grpc.tls.mutual ? " (mutual)" : "");
  }
#else
  // Built with INFERD_WITH_GRPC=OFF: the gRPC flags still parse (one command
  // line for every build) and have no effect. Printed like the listening
  // lines: it is what launchers look for instead of one.
  LogAlways("gRPC is not served (built with INFERD_WITH_GRPC=OFF)");
#endif
  return Status::Ok();
}

// Starts the services the flags ask for, in order: metrics, HTTP, gRPC.
Status StartServices(const CommandLine& cl, InferenceServer& server, Services& s) {
  if (cl.allow_metrics) INFERD_RETURN_IF_ERROR(StartMetrics(cl, server, s));
  if (cl.allow_http) INFERD_RETURN_IF_ERROR(StartHttp(cl, server, s));
  return StartGrpc(cl, server, s);
}

void WaitForShutdownSignal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  INFERD_LOG(Info) << "received " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", shutting down";
}

// Readiness turns false; the server keeps serving for the drain delay while
// balancers notice, then stops accepting. In-flight work gets until the exit
// timeout, counted from the end of the drain delay; then everything stops.
void Shutdown(const CommandLine& cl, InferenceServer& server, Services& s) {
  server.BeginShutdown();
  if (cl.drain_delay_secs > 0) {
    INFERD_LOG(Info) << "draining for " << cl.drain_delay_secs << " s";
    std::this_thread::sleep_for(std::chrono::seconds(cl.drain_delay_secs));
  }
  // Models UNLOADING (--model-unload-delay-secs) served through the drain;
  // they unload now, and the unload calls waiting for them are answered
  // before the front ends wait for their calls to finish.
  server.EndUnloadDelays();
  if (s.http) {
    s.http->StopAccepting();
    INFERD_VLOG(1) << "HTTP: no longer accepting connections";
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(cl.exit_timeout_secs);
  auto remaining_ms = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
#ifdef INFERD_HAS_GRPC_FRONTEND
  if (s.grpc) {
    // Stops accepting calls, lets open streams write what they owe, waits for
    // in-flight calls until the exit timeout and cancels the rest. Models are
    // still running here, so every accepted request completes.
    s.grpc->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(remaining_ms()));
    INFERD_VLOG(1) << "gRPC: every call finished";
  }
#endif
  bool idle = server.WaitForIdle(remaining_ms());
  if (s.http) idle = s.http->WaitForIdle(remaining_ms()) && idle;
  if (!idle) INFERD_LOG(Warning) << "exit timeout reached with requests still in flight";
  if (s.http) s.http->Stop();
  if (s.metrics) s.metrics->Stop();
  INFERD_VLOG(1) << "front ends stopped; stopping the models";
  server.Stop();
  server.tracer().Close();  // every trace is complete: end the file, send the spans (bounded)
  INFERD_LOG(Info) << "stopped";
}

// Every --model-repository must be a readable directory, or an s3:// URL
// that parses with credentials that can be read, at start, whatever the
// control mode: a typo in a deployment must not start a server that is
// ready with nothing in it. (Whether an object store answers is known only
// when the server lists it: InferenceServer::Start. Later, in poll mode, a
// repository that goes missing is a warning at each poll:
// InferenceServer::Poll.)
bool RepositoriesUsable(const CommandLine& cl) {
  bool usable = true;
  for (const auto& repository : cl.server.repositories) {
    std::string description;
    if (Status s = CheckRepositoryString(repository, &description); !s.ok()) {
      INFERD_LOG(Error) << "--model-repository: " << EscapeControl(s.message());
      usable = false;
    } else if (!description.empty()) {
      INFERD_LOG(Info) << "model repository " << EscapeControl(description);
    }
  }
  return usable;
}

// --cpu-set (docs/operations.md, "CPU pinning and NUMA"): resolved against the
// CPUs this process may use and, unless none, applied to the main thread
// before any other thread exists, so that every thread inherits it; instance
// threads narrow themselves (core/cpu_affinity.h). False (logged) when the
// set cannot be used: a flag error.
bool PlaceOnCpus(const CommandLine& cl) {
  auto allowed = AllowedCpus();
  if (!allowed.ok()) {
    INFERD_LOG(Error) << "--cpu-set: " << allowed.status().message();
    return false;
  }
  auto set = ResolveCpuSet(cl.cpu_set, *allowed);
  if (!set.ok()) {
    INFERD_LOG(Error) << set.status().message();
    return false;
  }
  const bool pin = cl.cpu_set.mode != CpuSetMode::kNone;
  if (pin) {
    if (Status s = PinCurrentThread(*set); !s.ok()) {
      INFERD_LOG(Error) << "--cpu-set: " << s.message();
      return false;
    }
  }
  const auto cgroup = CgroupCpus();
  const std::string where =
      std::to_string(allowed->size()) + " CPU(s) this process may use (" + allowed->ToString() +
      (cgroup ? "; cgroup cpuset " + cgroup->ToString() : std::string()) + ")";
  if (!pin) {
    INFERD_LOG(Info) << "CPU set: none (threads not pinned); thread layouts sized by the " << where;
  } else {
    INFERD_LOG(Info) << "CPU set: " << set->ToString() << ", " << set->size() << " of the " << where
                     << "; every thread on it, instances of automatic layouts on "
                     << "their own slices";
  }
  SetCpuPlacement(std::move(*set), pin);
  return true;
}

// Everything after the flags: start, serve until SIGTERM/SIGINT, shut down.
// The exit code.
int Serve(const CommandLine& cl) {
  if (!RepositoriesUsable(cl)) return 1;
  for (const auto& w : cl.trace.warnings) INFERD_LOG(Warning) << w;
  const sigset_t signals = BlockShutdownSignals();
  ServerOptions options = cl.server;
  options.tracer = trace::MakeServerTracer(cl.trace, "inferd");  // docs/tracing.md
  InferenceServer server(std::move(options),
                         BackendRegistry::WithBuiltins(cl.server.backend_directory));
  LogStartupSettings(cl, server);
  if (Status started = server.Start(); !started.ok()) {
    INFERD_LOG(Error) << started.message();
    return 1;
  }
  LogModelStates(server);
  Services services;
  if (Status s = StartServices(cl, server, services); !s.ok()) {
    INFERD_LOG(Error) << s.message();
    return 1;
  }
  WaitForShutdownSignal(signals);
  Shutdown(cl, server, services);
  return 0;
}

}  // namespace
}  // namespace inferd

int main(int argc, char** argv) {
  using namespace inferd;
  auto cl = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!cl.ok()) {
    INFERD_LOG(Error) << cl.status().message();
    return 2;
  }
  if (cl->help) {
    std::cout << CommandLineUsage();
    return 0;
  }
  if (Status log = OpenLogFile(cl->log); !log.ok()) {
    INFERD_LOG(Error) << log.message();
    return 2;
  }
  if (!PlaceOnCpus(*cl)) return 2;
  return Serve(*cl);
}
