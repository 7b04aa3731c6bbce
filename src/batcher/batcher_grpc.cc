// The batcher's gRPC front end: GRPCInferenceService on the callback API.
// ModelInfer goes through Batcher::Infer; ModelStreamInfer is proxied whole
// to one upstream (StreamProxy); every other RPC is proxied unary.
#include <grpcpp/grpcpp.h>

#include <mutex>
#include <string_view>

#include "batcher/batcher.h"

namespace inferd::batcher {

using Async = middleman::InferdStub::async_interface;
using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

namespace {

// A unary call's reactor whose `cancelled` flag follows the caller.
class Reactor : public ::grpc::ServerUnaryReactor {
 public:
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  void OnCancel() override { cancelled->store(true); }
  void OnDone() override { delete this; }
};

middleman::CallOptions CallFrom(const ::grpc::CallbackServerContext* context,
                                const Reactor* reactor) {
  middleman::CallOptions call;
  call.cancelled = reactor->cancelled;
  const auto deadline = context->deadline();
  if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
    call.deadline = deadline;
  }
  return call;
}

// Client metadata worth passing upstream (triton_grpc_error, a restricted
// protocol's key, traceparent), without gRPC's own headers.
bool Forwarded(std::string_view key) {
  return !key.empty() && key[0] != ':' && key.rfind("grpc-", 0) != 0 && key != "content-type" &&
         key != "user-agent" && key != "te" && key != "authority" && key != "inferd-model";
}

// One ModelStreamInfer proxied to one upstream stream: a request is read
// from the client only once the previous one is written upstream, and a
// response read from upstream only once the previous one is written to the
// client (one write at a time each way). The upstream's final status is the
// client's. Owns itself: deleted in OnDone, which comes after Finish, which
// comes after the upstream call is done.
class StreamProxy : public ::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse> {
 public:
  StreamProxy(::grpc::CallbackServerContext* server, middleman::InferdStub& stub)
      : upstream_(this) {
    const auto deadline = server->deadline();
    if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
      client_.set_deadline(deadline);
    }
    for (const auto& [key, value] : server->client_metadata()) {
      std::string_view k(key.data(), key.size());
      if (Forwarded(k))
        client_.AddMetadata(std::string(k), std::string(value.data(), value.size()));
    }
    stub.async()->ModelStreamInfer(&client_, &upstream_);
    upstream_.StartRead(&response_);
    upstream_.StartCall();
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (upstream_finished_) return;
    if (ok) {
      upstream_.StartWrite(&request_);
    } else {
      upstream_.StartWritesDone();
    }
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (finish_) {
      lock.unlock();
      return FinishOnce();
    }
    if (ok) upstream_.StartRead(&response_);
  }
  void OnCancel() override { client_.TryCancel(); }
  void OnDone() override { delete this; }

 private:
  class Upstream : public ::grpc::ClientBidiReactor<ModelInferRequest, ModelStreamInferResponse> {
   public:
    explicit Upstream(StreamProxy* proxy) : proxy_(proxy) {}
    void OnReadDone(bool ok) override {
      if (!ok) return;
      std::lock_guard<std::mutex> lock(proxy_->mu_);
      proxy_->writing_ = true;
      proxy_->StartWrite(&proxy_->response_);
    }
    void OnWriteDone(bool ok) override {
      if (ok) proxy_->StartRead(&proxy_->request_);
    }
    void OnDone(const ::grpc::Status& status) override {
      std::unique_lock<std::mutex> lock(proxy_->mu_);
      proxy_->upstream_finished_ = true;
      proxy_->status_ = status;
      proxy_->finish_ = true;
      const bool now = !proxy_->writing_;
      lock.unlock();
      if (now) proxy_->FinishOnce();
    }

   private:
    StreamProxy* const proxy_;
  };

  // The last thing its caller does: OnDone may delete the proxy as soon as
  // Finish has been called.
  void FinishOnce() {
    if (finished_.exchange(true)) return;
    Finish(status_);
  }

  ::grpc::ClientContext client_;
  Upstream upstream_;
  ModelInferRequest request_;
  ModelStreamInferResponse response_;
  std::mutex mu_;
  bool writing_ = false;            // a write to the client is outstanding
  bool upstream_finished_ = false;  // the upstream call is done
  bool finish_ = false;             // Finish once the write is done
  std::atomic<bool> finished_{false};
  ::grpc::Status status_;
};

}  // namespace

class Batcher::GrpcService : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit GrpcService(Batcher& batcher) : batcher_(batcher) {}

  ::grpc::ServerUnaryReactor* ModelInfer(::grpc::CallbackServerContext* context,
                                         const ModelInferRequest* request,
                                         inference::ModelInferResponse* response) override {
    auto* reactor = new Reactor();
    // The message lives until Finish, after the batch's last use of it.
    std::shared_ptr<const ModelInferRequest> alias(std::shared_ptr<void>(), request);
    batcher_.Infer(
        std::move(alias), CallFrom(context, reactor), "grpc",
        [reactor, response](const ::grpc::Status& s, inference::ModelInferResponse& answer) {
          if (s.ok()) response->Swap(&answer);
          reactor->Finish(s);
        });
    return reactor;
  }

  ::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse>* ModelStreamInfer(
      ::grpc::CallbackServerContext* context) override {
    batcher_.service()
        .metrics()
        .counter("batcher_pass_through_total", "Requests sent on unchanged, by reason",
                 {{"reason", "stream"}})
        .Add();
    return new StreamProxy(context, batcher_.NextPool().NextStub());
  }

#define INFERD_BATCHER_PROXY(Rpc)                                                               \
  ::grpc::ServerUnaryReactor* Rpc(::grpc::CallbackServerContext* context,                       \
                                  const inference::Rpc##Request* request,                       \
                                  inference::Rpc##Response* response) override {                \
    return Proxy<inference::Rpc##Request, inference::Rpc##Response>(context, request, response, \
                                                                    &Async::Rpc);               \
  }
  INFERD_BATCHER_PROXY(ServerLive)
  INFERD_BATCHER_PROXY(ServerReady)
  INFERD_BATCHER_PROXY(ModelReady)
  INFERD_BATCHER_PROXY(ServerMetadata)
  INFERD_BATCHER_PROXY(ModelMetadata)
  INFERD_BATCHER_PROXY(ModelConfig)
  INFERD_BATCHER_PROXY(ModelStatistics)
  INFERD_BATCHER_PROXY(RepositoryIndex)
  INFERD_BATCHER_PROXY(RepositoryModelLoad)
  INFERD_BATCHER_PROXY(RepositoryModelUnload)
  INFERD_BATCHER_PROXY(SystemSharedMemoryStatus)
  INFERD_BATCHER_PROXY(SystemSharedMemoryRegister)
  INFERD_BATCHER_PROXY(SystemSharedMemoryUnregister)
  INFERD_BATCHER_PROXY(CudaSharedMemoryStatus)
  INFERD_BATCHER_PROXY(CudaSharedMemoryRegister)
  INFERD_BATCHER_PROXY(CudaSharedMemoryUnregister)
  INFERD_BATCHER_PROXY(TraceSetting)
  INFERD_BATCHER_PROXY(LogSettings)
#undef INFERD_BATCHER_PROXY

 private:
  template <typename Request, typename Response>
  ::grpc::ServerUnaryReactor* Proxy(::grpc::CallbackServerContext* context, const Request* request,
                                    Response* response,
                                    void (Async::*method)(::grpc::ClientContext*, const Request*,
                                                          Response*,
                                                          std::function<void(::grpc::Status)>)) {
    auto* reactor = new Reactor();
    batcher_.NextPool().Call<Request, Response>(
        method, *request, CallFrom(context, reactor),
        [reactor, response](const ::grpc::Status& s, Response& answer) {
          if (s.ok()) response->Swap(&answer);
          reactor->Finish(s);
        });
    return reactor;
  }

  Batcher& batcher_;
};

// Here, where GrpcService is complete.
Batcher::~Batcher() = default;

void Batcher::RegisterGrpc() {
  grpc_ = std::make_shared<GrpcService>(*this);
  service_.AddGrpcService(grpc_.get());
}

}  // namespace inferd::batcher
