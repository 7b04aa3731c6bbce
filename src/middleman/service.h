// Service: the serving scaffolding of a small asynchronous microservice
// that sits next to inferd (a "middleman", docs/gateway.md). It owns
//   - an HTTP/1.1 server (frontend/http's Beast transport) with a route
//     table: `Route("POST", "/v1/classify/{}", handler)`;
//   - optionally a gRPC server for the service's own gRPC services;
//   - a compute thread pool for CPU-bound work (decoding, post-processing),
//     so that neither I/O threads nor gRPC's threads ever do it;
//   - the built-in endpoints GET /health/live, GET /health/ready (the
//     readiness callback decides) and GET /metrics (Prometheus text), with
//     per-route request counts, latencies and requests in flight.
//
// Tracing (SetTracer): each request on a route the service registered
// (not the built-in endpoints) gets a SERVER span named "<METHOD> <route>",
// continuing the caller's `traceparent` when it sent one, in
// Request::trace (null when not traced; pass it on in CallOptions::trace);
// it ends when the response is sent, with its HTTP status. gRPC handlers
// start theirs with tracer()->StartServerSpan.
//
// Handlers get the request and a responder; they must not block: start
// asynchronous work (InferdPool calls, Compute) and answer from its
// completion, on any thread, exactly once. The request's `cancelled` flag
// turns true when the client disconnects; pass it on to InferdPool calls.
//
// Threading: Route/AddGrpcService/SetReadiness before Start; everything else
// from any thread. Stop drains: it stops accepting, waits up to `drain` for
// answers owed, then closes connections.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "frontend/http/http_types.h"
#include "middleman/metrics_registry.h"
#include "middleman/tracing.h"

namespace inferd::middleman {

struct ServiceOptions {
  std::string name = "middleman";  // metric name prefix and log tag
  std::string http_address = "0.0.0.0";
  uint16_t http_port = 8080;  // 0: any free port
  int http_threads = 2;
  size_t max_body_bytes = 16 << 20;
  std::string grpc_address = "0.0.0.0";
  int grpc_port = -1;  // -1: no gRPC server; 0: any free port
  int grpc_max_message_bytes = 16 << 20;
  int compute_threads = 2;
};

struct Request {
  http::HttpRequest http;
  std::vector<std::string> params;   // the "{}" segments of the route, percent-decoded
  std::shared_ptr<TraceSpan> trace;  // the request's SERVER span; null: not traced

  // Query parameter `key`, percent-decoded, into *value; false if absent.
  bool Query(std::string_view key, std::string* value) const;
  const std::string& body() const { return *http.body; }
};

using Responder = std::shared_ptr<http::HttpResponder>;
using Handler = std::function<void(Request, Responder)>;

// A JSON {"error": message} response with `status`'s HTTP code.
http::HttpResponse ErrorResponse(const Status& status);
// inferd's codes are gRPC's codes.
Status FromGrpc(const ::grpc::Status& status);
::grpc::Status ToGrpc(const Status& status);

class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // `pattern` is a path whose segments are literals or "{}" (one non-empty
  // segment, handed to the handler in Request::params); `route` names it in
  // metrics (default: the pattern).
  void Route(std::string method, const std::string& pattern, Handler handler,
             std::string route = "");
  // Not owned; must outlive the service.
  void AddGrpcService(::grpc::Service* service);
  // /health/ready asks `ready`, which answers through its callback, once,
  // from any thread (it may ask inferd first). Default: always ready.
  using Readiness = std::function<void(std::function<void(bool)>)>;
  void SetReadiness(Readiness ready);
  // Not owned; must outlive the service. Null (the default): no tracing.
  void SetTracer(Tracer* tracer);
  Tracer* tracer() const;

  MetricsRegistry& metrics() { return metrics_; }
  // Runs `work` on the compute pool.
  void Compute(std::function<void()> work);

  Status Start();
  uint16_t http_port() const;
  int grpc_port() const;  // -1 without gRPC
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(5000));

  // Blocks SIGINT/SIGTERM in this thread (call first in main, before any
  // thread starts) and waits for one; returns the signal.
  static void BlockShutdownSignals();
  static int WaitForShutdownSignal();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  MetricsRegistry metrics_;
};

}  // namespace inferd::middleman
