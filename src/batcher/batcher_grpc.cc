// The batcher's gRPC front end: GRPCInferenceService on the callback API.
// ModelInfer goes through Batcher::Infer; ModelStreamInfer is
// batcher_stream.cc's; every other RPC is proxied unary.
#include <grpcpp/grpcpp.h>

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
    return batcher_.StartStream(context);
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
