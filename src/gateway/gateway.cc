#include "gateway/gateway.h"

#include <charconv>
#include <cstring>

namespace inferd::gateway {

using inference::GRPCInferenceService;
using middleman::CallOptions;
using middleman::Tracer;
using Async = middleman::InferdStub::async_interface;

// gateway.proto's service on gRPC's callback API: one reactor per call,
// cancelled when the caller cancels or its deadline passes.
class Gateway::GrpcService : public ::inferd_gateway::v1::Gateway::CallbackService {
 public:
  explicit GrpcService(Gateway& gateway) : gateway_(gateway) {}

  ::grpc::ServerUnaryReactor* Classify(::grpc::CallbackServerContext* context,
                                       const ::inferd_gateway::v1::ClassifyRequest* request,
                                       ::inferd_gateway::v1::ClassifyResponse* response) override {
    auto* reactor = new Reactor();
    CallOptions call;
    call.cancelled = reactor->cancelled;
    if (Tracer* tracer = gateway_.service_.tracer()) {
      call.trace =
          tracer->StartServerSpan("inferd_gateway.v1.Gateway/Classify", context->client_metadata());
    }
    if (call.trace) {
      call.trace->SetAttribute("rpc.system", std::string("grpc"));
      call.trace->SetAttribute("rpc.service", std::string("inferd_gateway.v1.Gateway"));
      call.trace->SetAttribute("rpc.method", std::string("Classify"));
      call.trace->SetAttribute("gateway.pipeline", request->pipeline());
    }
    const auto deadline = context->deadline();
    if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
      call.deadline = deadline;
    }
    const uint32_t k = request->top_k() == 0 ? gateway_.options_.default_top_k : request->top_k();
    if (k > gateway_.options_.max_top_k) {
      ::grpc::Status invalid(
          ::grpc::StatusCode::INVALID_ARGUMENT,
          "top_k must be between 1 and " + std::to_string(gateway_.options_.max_top_k));
      EndSpan(call.trace, invalid);
      reactor->Finish(invalid);
      return reactor;
    }
    // The request message lives until Finish, which comes after the last
    // use of the image: alias it instead of copying it.
    std::shared_ptr<const std::string> image(std::shared_ptr<void>(), &request->image());
    const auto start = std::chrono::steady_clock::now();
    gateway_.Classify(
        request->pipeline(), std::move(image), k, call,
        [this, reactor, response, start, span = call.trace](const Status& s,
                                                            ClassifyResult result) {
          auto& metrics = gateway_.service_.metrics();
          metrics
              .counter("gateway_grpc_requests_total",
                       "Gateway.Classify calls answered, by gRPC status code",
                       {{"code", std::to_string(static_cast<int>(s.code()))}})
              .Add();
          metrics
              .histogram("gateway_grpc_request_duration_seconds",
                         "Time from receiving a Gateway.Classify call to answering it")
              .Observe(
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          if (s.ok()) {
            response->set_model(result.model);
            for (const auto& c : result.classes) {
              auto* out = response->add_classes();
              out->set_label(c.label);
              out->set_score(c.score);
              out->set_index(c.index);
            }
          }
          ::grpc::Status status = middleman::ToGrpc(s);
          EndSpan(span, status);
          reactor->Finish(status);
        });
    return reactor;
  }

 private:
  // The SERVER span ends with the call's gRPC status (an error for the
  // codes that are the server's fault, as OpenTelemetry's gRPC conventions).
  static void EndSpan(const std::shared_ptr<middleman::TraceSpan>& span,
                      const ::grpc::Status& status) {
    if (!span) return;
    span->SetAttribute("rpc.grpc.status_code", static_cast<int64_t>(status.error_code()));
    switch (status.error_code()) {
      case ::grpc::StatusCode::UNKNOWN:
      case ::grpc::StatusCode::DEADLINE_EXCEEDED:
      case ::grpc::StatusCode::UNIMPLEMENTED:
      case ::grpc::StatusCode::INTERNAL:
      case ::grpc::StatusCode::UNAVAILABLE:
      case ::grpc::StatusCode::DATA_LOSS:
        span->SetError(status.error_message());
        break;
      default:
        break;
    }
    span->End();
  }

  class Reactor : public ::grpc::ServerUnaryReactor {
   public:
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    void OnCancel() override { cancelled->store(true); }
    void OnDone() override { delete this; }
  };
  Gateway& gateway_;
};

Gateway::Gateway(middleman::Service& service, middleman::InferdPool& pool, GatewayOptions options)
    : service_(service),
      pool_(pool),
      options_(std::move(options)),
      grpc_(std::make_unique<GrpcService>(*this)) {
  service_.Route(
      "POST", "/v1/classify/{}",
      [this](middleman::Request r, middleman::Responder out) {
        HandleHttp(std::move(r), std::move(out));
      },
      "/v1/classify");
  service_.AddGrpcService(grpc_.get());
  service_.SetReadiness(
      [this](std::function<void(bool)> answer) { InferdReady(std::move(answer)); });
}

Gateway::~Gateway() = default;

void Gateway::HandleHttp(middleman::Request request, middleman::Responder responder) {
  uint32_t k = options_.default_top_k;
  std::string text;
  if (request.Query("top_k", &text)) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), k);
    if (ec != std::errc() || end != text.data() + text.size() || k < 1 || k > options_.max_top_k) {
      responder->Send(http::ErrorResponse(400, "top_k must be an integer between 1 and " +
                                                   std::to_string(options_.max_top_k) + ", got '" +
                                                   text + "'"));
      return;
    }
  }
  if (request.body().empty()) {
    responder->Send(http::ErrorResponse(
        400, "empty body: POST the encoded image (JPEG or PNG) as the request body"));
    return;
  }
  CallOptions call;
  call.cancelled = request.http.cancelled;
  call.trace = request.trace;
  if (call.trace) call.trace->SetAttribute("gateway.pipeline", request.params[0]);
  auto image = std::shared_ptr<const std::string>(request.http.body);
  Classify(request.params[0], std::move(image), k, call,
           [responder = std::move(responder)](const Status& s, const ClassifyResult& result) {
             if (!s.ok()) {
               responder->Send(middleman::ErrorResponse(s));
               return;
             }
             responder->Send(http::HttpResponse{
                 200, "application/json", {}, ClassesJson(result.model, result.classes)});
           });
}

void Gateway::Classify(const std::string& pipeline, std::shared_ptr<const std::string> image,
                       uint32_t top_k, const CallOptions& call, Done done) {
  if (image->empty()) {
    done(InvalidArgument("empty image: send the encoded image (JPEG or PNG)"), {});
    return;
  }
  WithPipeline(pipeline, call,
               [this, image = std::move(image), top_k, call, done = std::move(done)](
                   const Status& s, const PipelineInfo* p) mutable {
                 if (!s.ok()) {
                   service_.Compute([done, s] { done(s, {}); });
                   return;
                 }
                 Infer(*p, std::move(image), top_k, call, std::move(done), true);
               });
}

void Gateway::WithPipeline(const std::string& pipeline, const CallOptions& call,
                           std::function<void(const Status&, const PipelineInfo*)> next) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pipelines_.find(pipeline);
    // Entries are never erased or changed, so the pointer stays valid.
    if (it != pipelines_.end()) return next(Status::Ok(), &it->second);
  }
  inference::ModelMetadataRequest request;
  request.set_name(pipeline);
  pool_.Call<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(
      &Async::ModelMetadata, std::move(request), call,
      [this, pipeline, next = std::move(next)](const ::grpc::Status& status,
                                               inference::ModelMetadataResponse& response) {
        if (!status.ok()) return next(Describe(pipeline, status), nullptr);
        auto info = PipelineFromMetadata(response);
        if (!info.ok()) return next(info.status(), nullptr);
        const PipelineInfo* p;
        {
          std::lock_guard<std::mutex> lock(mu_);
          p = &pipelines_.try_emplace(pipeline, std::move(*info)).first->second;
        }
        next(Status::Ok(), p);
      });
}

void Gateway::Infer(const PipelineInfo& pipeline, std::shared_ptr<const std::string> image,
                    uint32_t top_k, const CallOptions& call, Done done, bool allow_shm) {
  const PipelineInfo* p = &pipeline;
  // With a lease the input goes through shared memory: the slot holds the
  // BYTES element until inferd has answered (the lease rides in the callback).
  std::shared_ptr<middleman::ShmPool::Lease> lease;
  if (options_.shm != nullptr && allow_shm) lease = options_.shm->Acquire(4 + image->size());
  inference::ModelInferRequest request;
  if (lease) {
    const std::string element = BytesElement(*image);
    std::memcpy(lease->data(), element.data(), element.size());
    request = MakeShmInferRequest(pipeline, lease->region(), element.size());
  } else {
    request = MakeInferRequest(pipeline, *image);
  }
  service_.metrics()
      .counter("gateway_inputs_total", "Images sent to inferd, by how they travelled",
               {{"path", lease ? "shared_memory" : "inline"}})
      .Add();
  pool_.Call<inference::ModelInferRequest, inference::ModelInferResponse>(
      &Async::ModelInfer, std::move(request), call,
      [this, p, image = std::move(image), top_k, call, done = std::move(done), lease](
          const ::grpc::Status& status, inference::ModelInferResponse& response) {
        if (!status.ok()) {
          if (lease && status.error_message().find(lease->region()) != std::string::npos) {
            // inferd no longer knows the region (it restarted): register the
            // slots again and send this image inline.
            options_.shm->Invalidate();
            return Infer(*p, image, top_k, call, done, false);
          }
          Status s = Describe(p->name, status);
          service_.Compute([done, s] { done(s, {}); });
          return;
        }
        // The response is only valid during this callback: move it along.
        auto owned = std::make_shared<inference::ModelInferResponse>(std::move(response));
        service_.Compute([this, p, top_k, done, owned] {
          auto classes = TopClasses(*p, *owned, top_k, options_.labels.For(p->name));
          if (!classes.ok()) return done(classes.status(), {});
          done(Status::Ok(), ClassifyResult{owned->model_name(), std::move(*classes)});
        });
      });
}

Status Gateway::Describe(const std::string& pipeline, const ::grpc::Status& status) const {
  switch (status.error_code()) {
    case ::grpc::StatusCode::UNAVAILABLE:
      return Unavailable("inferd at " + pool_.url() + " is unavailable: " + status.error_message());
    case ::grpc::StatusCode::NOT_FOUND:
      return NotFound("unknown pipeline '" + pipeline + "': " + status.error_message());
    case ::grpc::StatusCode::DEADLINE_EXCEEDED:
      return DeadlineExceeded("pipeline '" + pipeline + "': no answer from inferd in time");
    case ::grpc::StatusCode::CANCELLED:
      return Cancelled("pipeline '" + pipeline + "': cancelled");
    default:
      return Status(static_cast<StatusCode>(status.error_code()),
                    "pipeline '" + pipeline + "': " + status.error_message());
  }
}

void Gateway::InferdReady(std::function<void(bool)> answer) {
  CallOptions call;
  call.deadline = std::chrono::system_clock::now() + std::chrono::seconds(1);
  pool_.Call<inference::ServerReadyRequest, inference::ServerReadyResponse>(
      &Async::ServerReady, {}, call,
      [answer = std::move(answer)](const ::grpc::Status& s, inference::ServerReadyResponse& r) {
        answer(s.ok() && r.ready());
      });
}

}  // namespace inferd::gateway
