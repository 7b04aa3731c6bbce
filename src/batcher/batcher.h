// Batcher: infer-batcher's service (docs/batcher.md), on the middleman
// library. Clients talk to it as to inferd (KServe v2 gRPC and HTTP); it
// merges compatible ModelInfer requests of batch-1 clients into larger
// upstream calls (merge.h, batch_queue.h) and passes everything else on
// unchanged.
//
//   gRPC (batcher_grpc.cc): ModelInfer batched or passed through;
//     ModelStreamInfer (batcher_stream.cc) batched request by request, or
//     proxied whole to one upstream when its first request is for a
//     decoupled or sequence model; every other RPC of GRPCInferenceService
//     proxied to an upstream unchanged.
//   HTTP (batcher_http.cc): POST /v2/models/{m}[/versions/{v}]/infer (JSON
//     and the binary tensor extension) converted to ModelInferRequest and
//     the answer encoded as inferd's HTTP front end encodes it; health and
//     model metadata.
//
// Upstreams: one InferdPool per --upstream entry; each upstream call goes
// to the pool with the fewest calls in flight.
//
// Threading: Infer from any thread; answers run on gRPC completion threads
// or the queue's timer thread and must not block. Ownership: the Batcher
// borrows the Service and the pools, which must outlive it; it must be
// destroyed after the Service has stopped.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batcher/batch_queue.h"
#include "batcher/model_info.h"
#include "middleman/inferd_pool.h"
#include "middleman/service.h"

namespace inferd::batcher {

struct BatcherOptions {
  // Rows per upstream call; 0: the model's max_batch_size. Never above it.
  int64_t max_batch_size = 0;
  std::chrono::microseconds max_delay{500};
  // Upstream calls of one batch key in flight before requests wait for a
  // batch (batch_queue.h); 0: batches wait for max rows or max_delay only.
  int max_in_flight = 2;
  std::map<std::string, int64_t> model_max_batch_size;  // by model name
  std::map<std::string, std::chrono::microseconds> model_max_delay;
  std::chrono::milliseconds model_info_ttl{30000};
  size_t max_body_bytes = 64 << 20;  // an inflated HTTP body
};

class Batcher {
 public:
  // Registers the gRPC service, the HTTP routes and the readiness check.
  Batcher(middleman::Service& service, std::vector<middleman::InferdPool*> pools,
          BatcherOptions options);
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Answers `request` (alive until `done` has run) through a batch or on
  // its own. `protocol` labels the metrics ("grpc", "http"). Non-null
  // `decoupled_refusal` (static text): a decoupled model's request is
  // answered UNIMPLEMENTED with it instead of being sent (the HTTP front
  // end's one-answer rule, in inferd's words).
  void Infer(std::shared_ptr<const inference::ModelInferRequest> request,
             const middleman::CallOptions& call, const char* protocol, Answer done,
             const char* decoupled_refusal = nullptr);

  // Readiness turns false (batching goes on).
  void Drain();
  // Sends the waiting batches now; later requests are sent at once.
  void Flush();
  bool draining() const { return draining_.load(); }
  // Whether an upstream answers ServerReady (false while draining).
  void Ready(std::function<void(bool)> answer);

  // ModelStreamInfer's reactor (batcher_stream.cc).
  ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
  StartStream(::grpc::CallbackServerContext* context);
  // The model's info (cached), as Infer decides with it.
  void ModelInfoFor(const std::string& name, const std::string& version,
                    std::function<void(std::optional<ModelInfo>)> next);
  // Counts a request sent on unchanged for `reason`.
  void CountPassThrough(const std::string& reason);

  // The pool with the fewest calls in flight.
  middleman::InferdPool& NextPool();
  middleman::Service& service() { return service_; }

 private:
  class GrpcService;
  void RegisterGrpc();
  void RegisterHttp();
  // GET /v2/models/{m}[/versions/{v}][/ready] through ModelMetadata /
  // ModelReady, answered as inferd's HTTP front end answers them.
  void HandleHttpModel(const middleman::Request& request, const middleman::Responder& responder,
                       bool ready);
  void HandleHttpInfer(const middleman::Request& request, const middleman::Responder& responder);
  void SendUpstream(inference::ModelInferRequest request, const middleman::CallOptions& call,
                    Answer done);
  void Route(std::shared_ptr<const inference::ModelInferRequest> request,
             const middleman::CallOptions& call, const std::optional<ModelInfo>& info, Answer done);
  int64_t MaxRows(const std::string& model, const ModelInfo& info) const;
  std::chrono::microseconds MaxDelay(const std::string& model) const;

  middleman::Service& service_;
  const std::vector<middleman::InferdPool*> pools_;
  const BatcherOptions options_;
  const size_t max_body_bytes_;
  std::atomic<uint64_t> next_pool_{0};
  std::atomic<bool> draining_{false};
  middleman::Histogram& upstream_latency_;
  ModelInfoCache models_;
  BatchQueue queue_;
  std::shared_ptr<GrpcService> grpc_;  // shared: complete only in batcher_grpc.cc
};

}  // namespace inferd::batcher
