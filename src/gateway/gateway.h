// Gateway: classifies encoded images through inferd's image pipelines, on
// the middleman library. One flow serves both front doors:
//   POST /v1/classify/{pipeline}[?top_k=N]   body: the encoded image
//   gateway.proto Gateway.Classify
// 1. the pipeline's metadata (cached once found) says its input and output;
// 2. one ModelInfer call to inferd through the InferdPool, carrying the
//    caller's deadline and cancellation;
// 3. top-k and labels on the compute pool; JSON or the gRPC message.
// Errors: inferd's codes pass through (a bad image is inferd's
// INVALID_ARGUMENT, 400), an unknown pipeline is NOT_FOUND (404), inferd
// unreachable UNAVAILABLE (503), each message naming the pipeline.
//
// Threading: Classify may be called from any thread; `done` runs once, on a
// compute thread. The Gateway must outlive the Service it registers with and
// be destroyed after it stops.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gateway.grpc.pb.h"
#include "gateway/classify.h"
#include "middleman/inferd_pool.h"
#include "middleman/service.h"
#include "middleman/shm_pool.h"

namespace inferd::gateway {

struct GatewayOptions {
  Labels labels;
  uint32_t default_top_k = 5;
  uint32_t max_top_k = 1000;
  // Non-null (--shared-memory system): inputs go through these slots when
  // one is free and the image fits, else inline.
  middleman::ShmPool* shm = nullptr;
};

struct ClassifyResult {
  std::string model;
  std::vector<ClassScore> classes;
};

class Gateway {
 public:
  Gateway(middleman::Service& service, middleman::InferdPool& pool, GatewayOptions options);
  ~Gateway();

  // The HTTP route and the gRPC service are registered by the constructor.
  using Done = std::function<void(const Status&, ClassifyResult)>;
  void Classify(const std::string& pipeline, std::shared_ptr<const std::string> image,
                uint32_t top_k, const middleman::CallOptions& call, Done done);

  // Calls `answer` with whether inferd answers ServerReady (/health/ready).
  void InferdReady(std::function<void(bool)> answer);

 private:
  class GrpcService;
  void HandleHttp(middleman::Request request, middleman::Responder responder);
  void WithPipeline(const std::string& pipeline, const middleman::CallOptions& call,
                    std::function<void(const Status&, const PipelineInfo*)> next);
  void Infer(const PipelineInfo& pipeline, std::shared_ptr<const std::string> image, uint32_t top_k,
             const middleman::CallOptions& call, Done done, bool allow_shm);
  Status Describe(const std::string& pipeline, const ::grpc::Status& status) const;

  middleman::Service& service_;
  middleman::InferdPool& pool_;
  GatewayOptions options_;
  std::unique_ptr<GrpcService> grpc_;
  std::mutex mu_;
  std::map<std::string, PipelineInfo> pipelines_;  // found so far
};

}  // namespace inferd::gateway
