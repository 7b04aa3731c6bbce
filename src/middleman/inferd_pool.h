// InferdPool: a pool of gRPC channels to one inferd, each with its
// generated inference::GRPCInferenceService stub, and asynchronous unary
// calls on them with deadlines and cancellation.
//
//   InferdPool pool({.url = "127.0.0.1:8001", .channels = 4}, &metrics);
//   pool.Call(&Stub::async_interface::ModelInfer, std::move(request),
//             {.deadline = ..., .cancelled = http_request.cancelled},
//             [](const grpc::Status& s, inference::ModelInferResponse& r) { ... });
//
// Channels: calls go round-robin over `channels` channels (each its own
// HTTP/2 connection), so one connection's flow control or one slow stream
// does not hold the others back. Channels connect lazily and reconnect by
// themselves; a call while inferd is down fails at once with UNAVAILABLE
// (no wait-for-ready).
//
// Cancellation: a call whose `cancelled` flag becomes true (an HTTP client
// that went away, a gRPC caller that cancelled) is cancelled on the wire
// within a few milliseconds by the pool's sweeper thread; its callback then
// runs with CANCELLED. Every call has a deadline (the options' or the
// pool's default).
//
// Hardened inferd: `credentials` (InferdTlsCredentials: TLS, mutual TLS)
// secure every channel, and `metadata` goes with every call on the pool's
// channels — those of Call and those made on NextStub() — by a channel
// interceptor, e.g. the key of a restricted gRPC protocol
// ("triton-grpc-protocol-<key>").
//
// Routing: a Call about one model (ModelInfer, ModelMetadata, ModelReady,
// ModelConfig, ModelStatistics with a name) carries `inferd-model: <model>`
// (inferd/client/routing.h) unless `metadata` sets that header, so that an
// xDS target (url "xds:///inferd", hosts from inferd-discovery) or Envoy
// sends it to a host serving the model. Calls on NextStub() do not.
//
// Tracing: a Call whose options carry a `trace` span records a CLIENT span
// for the call (child of that span, named after the RPC, with its gRPC
// status) and sends `traceparent` (naming the client span) and the trace's
// `tracestate` in its metadata, so that inferd's spans join the trace.
//
// Threading: Call may be called from any thread. Callbacks run on gRPC's
// threads and must not block; post compute-bound work elsewhere
// (Service::Compute). Shutdown (and the destructor) cancels calls in flight
// and waits for their callbacks.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"
#include "grpc_service.grpc.pb.h"
#include "inferd/client/routing.h"
#include "middleman/metrics_registry.h"
#include "middleman/tracing.h"

namespace inferd::middleman {

using InferdStub = inference::GRPCInferenceService::Stub;

struct InferdPoolOptions {
  // inferd's gRPC endpoint: host:port, or any gRPC target such as
  // "xds:///inferd" (every channel resolves it through the xDS control plane
  // named by $GRPC_XDS_BOOTSTRAP).
  std::string url;
  int channels = 4;
  std::chrono::milliseconds default_timeout{10000};
  int max_message_bytes = 64 << 20;
  // Null: plain text. (Initialised members: designated initialisers that
  // leave them out stay warning-free.)
  std::shared_ptr<::grpc::ChannelCredentials> credentials = nullptr;
  // The name inferd's certificate must carry, when not the URL's host.
  std::string tls_server_name = {};
  // Sent with every call; keys as ParseInferdHeader makes them.
  std::vector<std::pair<std::string, std::string>> metadata = {};
};

// PEM files of TLS to inferd; empty ca_file: gRPC's roots; cert_file and
// key_file for mutual TLS (both or neither).
struct InferdTlsFiles {
  std::string ca_file, cert_file, key_file;
};

// SSL credentials from the files; INVALID_ARGUMENT naming the file that
// cannot be read or is not PEM.
StatusOr<std::shared_ptr<::grpc::ChannelCredentials>> InferdTlsCredentials(
    const InferdTlsFiles& files);

// "name: value" as a metadata entry: the name lower-cased and checked
// ([0-9a-z_.-], not grpc-*, not -bin), the value printable ASCII;
// INVALID_ARGUMENT naming the problem.
Status ParseInferdHeader(std::string_view spec, std::pair<std::string, std::string>& out);

// The model a request is about, for the inferd-model header; empty for
// requests about no single model (server, repository, shared memory).
inline std::string_view RoutingModel(const inference::ModelInferRequest& r) {
  return r.model_name();
}
inline std::string_view RoutingModel(const inference::ModelMetadataRequest& r) { return r.name(); }
inline std::string_view RoutingModel(const inference::ModelReadyRequest& r) { return r.name(); }
inline std::string_view RoutingModel(const inference::ModelConfigRequest& r) { return r.name(); }
inline std::string_view RoutingModel(const inference::ModelStatisticsRequest& r) {
  return r.name();
}
template <typename Request>
std::string_view RoutingModel(const Request&) {
  return {};
}

// The RPC's method name, for its client span ("" for one not listed).
inline std::string_view RpcName(const inference::ModelInferRequest&) { return "ModelInfer"; }
inline std::string_view RpcName(const inference::ModelMetadataRequest&) { return "ModelMetadata"; }
inline std::string_view RpcName(const inference::ModelReadyRequest&) { return "ModelReady"; }
inline std::string_view RpcName(const inference::ServerReadyRequest&) { return "ServerReady"; }
template <typename Request>
std::string_view RpcName(const Request&) {
  return {};
}

struct CallOptions {
  // Zero: now + the pool's default timeout.
  std::chrono::system_clock::time_point deadline{};
  // Becomes true when the caller no longer wants the answer; may be null.
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // The span the call is made in (the caller's SERVER span); null: untraced.
  // (Initialised: designated initialisers may leave it out.)
  std::shared_ptr<TraceSpan> trace = nullptr;
};

class InferdPool {
 public:
  InferdPool(InferdPoolOptions options, MetricsRegistry* metrics);
  ~InferdPool();
  InferdPool(const InferdPool&) = delete;
  InferdPool& operator=(const InferdPool&) = delete;

  const std::string& url() const { return options_.url; }

  // The next stub, round-robin, for calls this class does not wrap.
  InferdStub& NextStub();

  // Starts `method` (a member of InferdStub::async_interface, e.g.
  // &InferdStub::async_interface::ModelInfer) with `request`; `done` runs
  // exactly once with the status and the response.
  template <typename Request, typename Response>
  void Call(void (InferdStub::async_interface::*method)(::grpc::ClientContext*, const Request*,
                                                        Response*,
                                                        std::function<void(::grpc::Status)>),
            Request request, const CallOptions& options,
            std::function<void(const ::grpc::Status&, Response&)> done) {
    auto call = std::make_shared<TypedCall<Request, Response>>();
    call->request = std::move(request);
    call->done = std::move(done);
    InferdStub& stub = NextStub();
    AddRoutingMetadata(call->context, RoutingModel(call->request));
    if (options.trace) StartClientSpan(*call, *options.trace, RpcName(call->request));
    Begin(*call, options);
    (stub.async()->*method)(&call->context, &call->request, &call->response,
                            [this, call](::grpc::Status status) {
                              End(*call, status);
                              call->done(status, call->response);
                            });
  }

  // Calls in flight now.
  int64_t in_flight() const;

  // Cancels the calls in flight and waits for their callbacks; calls started
  // from then on are cancelled at once. Stubs stay usable for blocking calls
  // (a ShmPool unregisters its regions after this). The destructor calls it.
  void Shutdown();

 private:
  struct CallBase {
    ::grpc::ClientContext context;
    std::shared_ptr<const std::atomic<bool>> cancelled;
    std::chrono::steady_clock::time_point start;
    std::list<CallBase*>::iterator pos;
    std::shared_ptr<TraceSpan> span;  // the call's CLIENT span, when traced
  };
  template <typename Request, typename Response>
  struct TypedCall : CallBase {
    Request request;
    Response response;
    std::function<void(const ::grpc::Status&, Response&)> done;
  };

  // Adds `inferd-model: <model>` when the model has a name that can be
  // metadata and the options' metadata does not set the header.
  void AddRoutingMetadata(::grpc::ClientContext& context, std::string_view model) const;
  // The call's CLIENT span under `parent`, and its W3C metadata.
  void StartClientSpan(CallBase& call, const TraceSpan& parent, std::string_view rpc) const;
  void Begin(CallBase& call, const CallOptions& options);
  void End(CallBase& call, const ::grpc::Status& status);
  void Sweep();

  const InferdPoolOptions options_;
  bool metadata_sets_model_ = false;  // options_.metadata has inferd-model
  MetricsRegistry* metrics_;
  std::vector<std::shared_ptr<::grpc::Channel>> channels_;
  std::vector<std::unique_ptr<InferdStub>> stubs_;
  std::atomic<uint64_t> next_{0};

  mutable std::mutex mu_;
  std::condition_variable idle_;  // calls_ became empty
  std::condition_variable work_;  // wakes the sweeper
  std::list<CallBase*> calls_;    // in flight
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace inferd::middleman
