#include "batcher/batcher.h"

#include <algorithm>

#include "core/status.h"

namespace inferd::batcher {

using Async = middleman::InferdStub::async_interface;

namespace {

// The label of a gRPC code: inferd's codes are gRPC's (core/status.h), and
// UNAUTHENTICATED, the one gRPC code inferd has no name for, by its name.
std::string CodeLabel(::grpc::StatusCode code) {
  if (code == ::grpc::StatusCode::UNAUTHENTICATED) return "UNAUTHENTICATED";
  return StatusCodeName(static_cast<StatusCode>(code));
}

}  // namespace

Batcher::Batcher(middleman::Service& service, std::vector<middleman::InferdPool*> pools,
                 BatcherOptions options)
    : service_(service),
      pools_(std::move(pools)),
      options_(std::move(options)),
      max_body_bytes_(options_.max_body_bytes),
      upstream_latency_(
          service.metrics().histogram("batcher_upstream_duration_seconds",
                                      "Duration of the batcher's upstream ModelInfer calls")),
      models_(
          [this](const std::string& name, const std::string& version,
                 ModelInfoCache::FetchDone done) {
            inference::ModelConfigRequest request;
            request.set_name(name);
            request.set_version(version);
            middleman::CallOptions call;
            call.deadline = std::chrono::system_clock::now() + std::chrono::seconds(5);
            NextPool().Call<inference::ModelConfigRequest, inference::ModelConfigResponse>(
                &Async::ModelConfig, std::move(request), call,
                [done = std::move(done)](const ::grpc::Status& s,
                                         inference::ModelConfigResponse& r) {
                  done(s.ok(), r.config());
                });
          },
          options_.model_info_ttl),
      queue_([this](inference::ModelInferRequest request, const middleman::CallOptions& call,
                    Answer done) { SendUpstream(std::move(request), call, std::move(done)); },
             &service.metrics(), options_.max_in_flight) {
  service_.metrics().AddRenderHook([this] {
    service_.metrics()
        .gauge("batcher_queued_requests", "Requests waiting in the batcher for their batch")
        .Set(static_cast<double>(queue_.queued()));
  });
  RegisterGrpc();
  RegisterHttp();
  service_.SetReadiness([this](std::function<void(bool)> answer) { Ready(std::move(answer)); });
}

middleman::InferdPool& Batcher::NextPool() {
  const size_t start = next_pool_.fetch_add(1) % pools_.size();
  middleman::InferdPool* best = pools_[start];
  for (size_t i = 1; i < pools_.size(); ++i) {
    middleman::InferdPool* p = pools_[(start + i) % pools_.size()];
    if (p->in_flight() < best->in_flight()) best = p;
  }
  return *best;
}

void Batcher::Infer(std::shared_ptr<const inference::ModelInferRequest> request,
                    const middleman::CallOptions& call, const char* protocol, Answer done,
                    const char* decoupled_refusal) {
  Answer counted = [this, protocol, done = std::move(done)](
                       const ::grpc::Status& s, inference::ModelInferResponse& response) {
    service_.metrics()
        .counter("batcher_requests_total", "Inference requests answered, by protocol and code",
                 {{"protocol", protocol}, {"code", CodeLabel(s.error_code())}})
        .Add();
    done(s, response);
  };
  const std::string name = request->model_name(), version = request->model_version();
  models_.Get(name, version,
              [this, request = std::move(request), call, counted = std::move(counted),
               decoupled_refusal](std::optional<ModelInfo> info) mutable {
                if (info && info->decoupled && decoupled_refusal != nullptr) {
                  inference::ModelInferResponse none;
                  return counted(
                      ::grpc::Status(::grpc::StatusCode::UNIMPLEMENTED, decoupled_refusal), none);
                }
                Route(std::move(request), call, info, std::move(counted));
              });
}

void Batcher::Route(std::shared_ptr<const inference::ModelInferRequest> request,
                    const middleman::CallOptions& call, const std::optional<ModelInfo>& info,
                    Answer done) {
  QueuedRequest r{std::move(request), 1, call.deadline, call.cancelled, std::move(done)};
  PassThrough reason = PassThrough::kNotBatchable;
  if (info) {
    int64_t rows = 0;
    auto key = MergeKey(*r.request, *info, &rows);
    if (auto* k = std::get_if<std::string>(&key)) {
      r.rows = rows;
      const std::string& model = r.request->model_name();
      queue_.Add(*k, MaxRows(model, *info), MaxDelay(model), std::move(r));
      return;
    }
    reason = std::get<PassThrough>(key);
  }
  CountPassThrough(std::string(PassThroughLabel(reason)));
  queue_.Send(std::move(r));
}

void Batcher::SendUpstream(inference::ModelInferRequest request, const middleman::CallOptions& call,
                           Answer done) {
  const auto start = std::chrono::steady_clock::now();
  std::string name = request.model_name(), version = request.model_version();
  NextPool().Call<inference::ModelInferRequest, inference::ModelInferResponse>(
      &Async::ModelInfer, std::move(request), call,
      [this, start, name = std::move(name), version = std::move(version), done = std::move(done)](
          const ::grpc::Status& s, inference::ModelInferResponse& response) {
        upstream_latency_.Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (s.error_code() == ::grpc::StatusCode::NOT_FOUND ||
            s.error_code() == ::grpc::StatusCode::UNAVAILABLE) {
          models_.Invalidate(name, version);
        }
        done(s, response);
      });
}

int64_t Batcher::MaxRows(const std::string& model, const ModelInfo& info) const {
  int64_t rows = options_.max_batch_size > 0 ? options_.max_batch_size : info.max_batch_size;
  auto it = options_.model_max_batch_size.find(model);
  if (it != options_.model_max_batch_size.end()) rows = it->second;
  return std::max<int64_t>(1, std::min(rows, info.max_batch_size));
}

std::chrono::microseconds Batcher::MaxDelay(const std::string& model) const {
  auto it = options_.model_max_delay.find(model);
  return it != options_.model_max_delay.end() ? it->second : options_.max_delay;
}

void Batcher::Drain() { draining_.store(true); }

void Batcher::Flush() { queue_.Stop(); }

void Batcher::Ready(std::function<void(bool)> answer) {
  if (draining_.load()) return answer(false);
  middleman::CallOptions call;
  call.deadline = std::chrono::system_clock::now() + std::chrono::seconds(1);
  NextPool().Call<inference::ServerReadyRequest, inference::ServerReadyResponse>(
      &Async::ServerReady, {}, call,
      [answer = std::move(answer)](const ::grpc::Status& s, inference::ServerReadyResponse& r) {
        answer(s.ok() && r.ready());
      });
}

}  // namespace inferd::batcher
