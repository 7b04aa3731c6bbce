// RecordingInferenceServer: a fake KServe v2 gRPC service on loopback that
// answers a few calls trivially and records, per call, the method and the
// values of the `inferd-model`, `traceparent` and `tracestate` metadata it
// arrived with. Tests of the
// clients' routing header (libinferclient, the middleman's InferdPool) use
// it instead of a real inferd.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace inferd::testing {

class RecordingInferenceServer final : public inference::GRPCInferenceService::Service {
 public:
  struct Call {
    std::string method;
    std::vector<std::string> model_headers;  // every inferd-model value, in order
    std::vector<std::string> traceparents;   // W3C trace context metadata, in order
    std::vector<std::string> tracestates;
  };

  RecordingInferenceServer() {
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", ::grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~RecordingInferenceServer() override { server_->Shutdown(); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // The calls so far, oldest first; clears the record.
  std::vector<Call> TakeCalls() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(calls_, {});
  }

  ::grpc::Status ServerLive(::grpc::ServerContext* ctx, const inference::ServerLiveRequest*,
                            inference::ServerLiveResponse* resp) override {
    Record("ServerLive", ctx);
    resp->set_live(true);
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelReady(::grpc::ServerContext* ctx, const inference::ModelReadyRequest*,
                            inference::ModelReadyResponse* resp) override {
    Record("ModelReady", ctx);
    resp->set_ready(true);
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelMetadata(::grpc::ServerContext* ctx,
                               const inference::ModelMetadataRequest* req,
                               inference::ModelMetadataResponse* resp) override {
    Record("ModelMetadata", ctx);
    resp->set_name(req->name());
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelConfig(::grpc::ServerContext* ctx, const inference::ModelConfigRequest* req,
                             inference::ModelConfigResponse* resp) override {
    Record("ModelConfig", ctx);
    resp->mutable_config()->set_name(req->name());
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelStatistics(::grpc::ServerContext* ctx,
                                 const inference::ModelStatisticsRequest*,
                                 inference::ModelStatisticsResponse*) override {
    Record("ModelStatistics", ctx);
    return ::grpc::Status::OK;
  }
  ::grpc::Status RepositoryModelLoad(::grpc::ServerContext* ctx,
                                     const inference::RepositoryModelLoadRequest*,
                                     inference::RepositoryModelLoadResponse*) override {
    Record("RepositoryModelLoad", ctx);
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelInfer(::grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                            inference::ModelInferResponse* resp) override {
    Record("ModelInfer", ctx);
    resp->set_model_name(req->model_name());
    resp->set_id(req->id());
    return ::grpc::Status::OK;
  }
  ::grpc::Status ModelStreamInfer(
      ::grpc::ServerContext* ctx,
      ::grpc::ServerReaderWriter<inference::ModelStreamInferResponse, inference::ModelInferRequest>*
          stream) override {
    Record("ModelStreamInfer", ctx);
    inference::ModelInferRequest req;
    while (stream->Read(&req)) {
      inference::ModelStreamInferResponse resp;
      resp.mutable_infer_response()->set_model_name(req.model_name());
      resp.mutable_infer_response()->set_id(req.id());
      stream->Write(resp);
    }
    return ::grpc::Status::OK;
  }

 private:
  void Record(std::string method, ::grpc::ServerContext* ctx) {
    Call call;
    call.method = std::move(method);
    auto values = [ctx](const char* key, std::vector<std::string>& out) {
      const auto range = ctx->client_metadata().equal_range(key);
      for (auto it = range.first; it != range.second; ++it)
        out.emplace_back(it->second.data(), it->second.size());
    };
    values("inferd-model", call.model_headers);
    values("traceparent", call.traceparents);
    values("tracestate", call.tracestates);
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(call));
  }

  int port_ = 0;
  std::unique_ptr<::grpc::Server> server_;
  std::mutex mu_;
  std::vector<Call> calls_;  // guarded by mu_
};

}  // namespace inferd::testing
