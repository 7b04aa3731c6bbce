// The gRPC services (internal to the gRPC front end): the KServe v2
// inference.GRPCInferenceService and grpc.health.v1.Health, on the callback
// API. Each RPC is answered from the InferenceServer facade; repository and
// shared-memory RPCs go through its ControlPlane, which answers them as it
// answers HTTP. Reactions never block: inference completes on a model
// instance thread (or inline, for a short model, before the handler
// returns), load/unload and CUDA registration on the control plane's
// worker.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "frontend/grpc/stream_infer.h"
#include "frontend/restricted_api.h"
#include "grpc_service.grpc.pb.h"
#include "health.grpc.pb.h"
#include "server/inference_server.h"

namespace inferd::grpc_frontend {

// ModelInfer requests are deserialised into shared-owned messages so that the
// decoded InferRequest can hold them (raw_input_contents are not copied).
class InferMessageAllocator final
    : public ::grpc::MessageAllocator<inference::ModelInferRequest, inference::ModelInferResponse> {
 public:
  ::grpc::MessageHolder<inference::ModelInferRequest, inference::ModelInferResponse>*
  AllocateMessages() override;
};

class InferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  InferenceService(InferenceServer& server, StreamRegistry& streams);

  using Ctx = ::grpc::CallbackServerContext;
  using Reactor = ::grpc::ServerUnaryReactor;

  Reactor* ServerLive(Ctx*, const inference::ServerLiveRequest*,
                      inference::ServerLiveResponse*) override;
  Reactor* ServerReady(Ctx*, const inference::ServerReadyRequest*,
                       inference::ServerReadyResponse*) override;
  Reactor* ModelReady(Ctx*, const inference::ModelReadyRequest*,
                      inference::ModelReadyResponse*) override;
  Reactor* ServerMetadata(Ctx*, const inference::ServerMetadataRequest*,
                          inference::ServerMetadataResponse*) override;
  Reactor* ModelMetadata(Ctx*, const inference::ModelMetadataRequest*,
                         inference::ModelMetadataResponse*) override;
  Reactor* ModelInfer(Ctx*, const inference::ModelInferRequest*,
                      inference::ModelInferResponse*) override;
  ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
  ModelStreamInfer(Ctx*) override;
  Reactor* ModelConfig(Ctx*, const inference::ModelConfigRequest*,
                       inference::ModelConfigResponse*) override;
  Reactor* RepositoryIndex(Ctx*, const inference::RepositoryIndexRequest*,
                           inference::RepositoryIndexResponse*) override;
  Reactor* RepositoryModelLoad(Ctx*, const inference::RepositoryModelLoadRequest*,
                               inference::RepositoryModelLoadResponse*) override;
  Reactor* RepositoryModelUnload(Ctx*, const inference::RepositoryModelUnloadRequest*,
                                 inference::RepositoryModelUnloadResponse*) override;

  Reactor* ModelStatistics(Ctx*, const inference::ModelStatisticsRequest*,
                           inference::ModelStatisticsResponse*) override;

  // Shared memory (system and CUDA regions), through the control plane.
  Reactor* SystemSharedMemoryStatus(Ctx*, const inference::SystemSharedMemoryStatusRequest*,
                                    inference::SystemSharedMemoryStatusResponse*) override;
  Reactor* SystemSharedMemoryRegister(Ctx*, const inference::SystemSharedMemoryRegisterRequest*,
                                      inference::SystemSharedMemoryRegisterResponse*) override;
  Reactor* SystemSharedMemoryUnregister(Ctx*, const inference::SystemSharedMemoryUnregisterRequest*,
                                        inference::SystemSharedMemoryUnregisterResponse*) override;
  Reactor* CudaSharedMemoryStatus(Ctx*, const inference::CudaSharedMemoryStatusRequest*,
                                  inference::CudaSharedMemoryStatusResponse*) override;
  Reactor* CudaSharedMemoryRegister(Ctx*, const inference::CudaSharedMemoryRegisterRequest*,
                                    inference::CudaSharedMemoryRegisterResponse*) override;
  Reactor* CudaSharedMemoryUnregister(Ctx*, const inference::CudaSharedMemoryUnregisterRequest*,
                                      inference::CudaSharedMemoryUnregisterResponse*) override;
  // Not served: UNIMPLEMENTED with a message naming the extension.
  Reactor* TraceSetting(Ctx*, const inference::TraceSettingRequest*,
                        inference::TraceSettingResponse*) override;
  // The logging extension (grpc_logging.cc).
  Reactor* LogSettings(Ctx*, const inference::LogSettingsRequest*,
                       inference::LogSettingsResponse*) override;

  // --grpc-restricted-protocol; set before the server starts.
  void Restrict(RestrictedApis apis) { restricted_ = std::move(apis); }

 private:
  RestrictedApis restricted_{true};
  InferenceServer& server_;
  StreamRegistry& streams_;
  InferMessageAllocator infer_allocator_;
};

// grpc.health.v1.Health/Check: SERVING when the server is ready, else
// NOT_SERVING; the requested service name is not interpreted (as Triton).
class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  explicit HealthService(InferenceServer& server) : server_(server) {}
  ::grpc::ServerUnaryReactor* Check(::grpc::CallbackServerContext*,
                                    const grpc::health::v1::HealthCheckRequest*,
                                    grpc::health::v1::HealthCheckResponse*) override;
  void Restrict(RestrictedApis apis) { restricted_ = std::move(apis); }

 private:
  RestrictedApis restricted_{true};
  InferenceServer& server_;
};

}  // namespace inferd::grpc_frontend
