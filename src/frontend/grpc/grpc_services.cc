#include "frontend/grpc/grpc_services.h"

#include <google/protobuf/util/json_util.h>

#include <atomic>
#include <cstddef>

#include "core/request_log.h"
#include "frontend/grpc/grpc_codec.h"
#include "frontend/grpc/grpc_trace.h"
#include "frontend/grpc/infer_call.h"
#include "frontend/grpc/restricted_grpc.h"

namespace inferd::grpc_frontend {

using inference::ModelInferRequest;
using inference::ModelInferResponse;

namespace {

::grpc::ServerUnaryReactor* FinishNow(::grpc::CallbackServerContext* ctx, const Status& s) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

// Parses the version or finishes the call with the error.
template <typename Fn>
::grpc::ServerUnaryReactor* WithVersion(::grpc::CallbackServerContext* ctx,
                                        const std::string& version, Fn&& fn) {
  auto v = ParseModelVersion(version);
  if (!v.ok()) return FinishNow(ctx, v.status());
  return FinishNow(ctx, fn(*v));
}

void SetTensorMetadata(
    const std::vector<TensorMetadata>& in,
    google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>* out) {
  for (const auto& t : in) {
    auto* m = out->Add();
    m->set_name(t.name);
    m->set_datatype(std::string(DataTypeToProtocol(t.datatype)));
    m->mutable_shape()->Add(t.shape.begin(), t.shape.end());
  }
}

// A repository call's parameters in the neutral types; the control plane
// decides which keys and types it takes. Bytes travel as a string.
StatusOr<Parameters> RepositoryParameters(
    const google::protobuf::Map<std::string, inference::ModelRepositoryParameter>& in) {
  Parameters out;
  for (const auto& [key, p] : in) {
    switch (p.parameter_choice_case()) {
      case inference::ModelRepositoryParameter::kBoolParam:
        out[key] = p.bool_param();
        break;
      case inference::ModelRepositoryParameter::kInt64Param:
        out[key] = p.int64_param();
        break;
      case inference::ModelRepositoryParameter::kStringParam:
        out[key] = p.string_param();
        break;
      case inference::ModelRepositoryParameter::kBytesParam:
        out[key] = p.bytes_param();
        break;
      default:
        return InvalidArgument("parameter '" + Bounded(key) + "' has no value");
    }
  }
  return out;
}

// A load call's parameters. "file:<path>" carries the file's bytes in
// bytes_param, as Triton types it; the other keys' types are the control
// plane's to check (the same words as over HTTP).
StatusOr<Parameters> LoadParameters(
    const google::protobuf::Map<std::string, inference::ModelRepositoryParameter>& in) {
  for (const auto& [key, p] : in) {
    if (key.starts_with("file:") &&
        p.parameter_choice_case() != inference::ModelRepositoryParameter::kBytesParam) {
      return InvalidArgument("invalid value type for load parameter '" + Bounded(key) +
                             "', expected bytes_param.");
    }
  }
  return RepositoryParameters(in);
}

// Finishes a call from the control plane's answer (any thread).
ControlPlane::Done FinishWith(::grpc::ServerUnaryReactor* reactor) {
  return [reactor](const Status& s) { reactor->Finish(ToGrpcStatus(s)); };
}

}  // namespace

// ---- InferenceService ----------------------------------------------------------

::grpc::MessageHolder<ModelInferRequest, ModelInferResponse>*
InferMessageAllocator::AllocateMessages() {
  return InferMessageHolder::Create();
}

InferenceService::InferenceService(InferenceServer& server, StreamRegistry& streams)
    : server_(server), streams_(streams) {
  SetMessageAllocatorFor_ModelInfer(&infer_allocator_);
}

::grpc::ServerUnaryReactor* InferenceService::ServerLive(Ctx* ctx,
                                                         const inference::ServerLiveRequest*,
                                                         inference::ServerLiveResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kHealth)) return denied;
  response->set_live(server_.IsLive());
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::ServerReady(
    Ctx* ctx, const inference::ServerReadyRequest*, inference::ServerReadyResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kHealth)) return denied;
  if (server_.IsShuttingDown()) return FinishNow(ctx, Unavailable("Server exiting"));
  response->set_ready(server_.IsReady());
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::ModelReady(
    Ctx* ctx, const inference::ModelReadyRequest* request,
    inference::ModelReadyResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kHealth)) return denied;
  return WithVersion(ctx, request->version(), [&](int64_t version) {
    auto ready = server_.ModelReady(request->name(), version);
    if (!ready.ok()) return ready.status();
    response->set_ready(*ready);
    return Status::Ok();
  });
}

::grpc::ServerUnaryReactor* InferenceService::ServerMetadata(
    Ctx* ctx, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kMetadata)) return denied;
  response->set_name(server_.id());
  response->set_version(InferenceServer::Version());
  for (const auto& e : server_.Extensions()) response->add_extensions(e);
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::ModelMetadata(
    Ctx* ctx, const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kMetadata)) return denied;
  return WithVersion(ctx, request->version(), [&](int64_t version) {
    auto md = server_.GetModelMetadata(request->name(), version);
    if (!md.ok()) return md.status();
    response->set_name(md->name);
    for (const auto& v : md->versions) response->add_versions(v);
    response->set_platform(md->platform);
    SetTensorMetadata(md->inputs, response->mutable_inputs());
    SetTensorMetadata(md->outputs, response->mutable_outputs());
    return Status::Ok();
  });
}

::grpc::ServerUnaryReactor* InferenceService::ModelInfer(Ctx* ctx, const ModelInferRequest* request,
                                                         ModelInferResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kInference)) return denied;
  if (Status name = ControlPlane::CheckModelName(request->model_name()); !name.ok()) {
    return FinishNow(ctx, name);
  }
  std::shared_ptr<trace::RequestTrace> trace;
  if (server_.tracer().Active()) {  // tracing off: this load is all it costs
    trace = SampleGrpcRequest(server_.tracer(), GrpcTraceContext(*ctx), request->model_name(),
                              std::chrono::steady_clock::now());
  }
  // The registered allocator makes the message shared-owned; the decoded
  // request holds it, so raw_input_contents are referenced, not copied.
  auto* holder = static_cast<InferMessageHolder*>(ctx->GetRpcAllocatorState());
  auto decoded = DecodeInferRequest(holder->shared_request(), &server_.shared_memory());
  if (!decoded.ok()) {
    Status s = decoded.status();
    // An unknown model is reported as such, whatever else is wrong.
    if (auto v = ParseModelVersion(request->model_version()); v.ok()) {
      if (Status m = server_.CheckModel(request->model_name(), *v); !m.ok()) s = m;
    }
    LogRefusedRequest("grpc", "gRPC", request->model_name(), s);
    return FinishNow(ctx, s);
  }
  // One response per call: a decoupled model is refused (Triton's text).
  decoded->request->decoupled_refusal =
      "ModelInfer RPC doesn't support models with decoupled transaction policy";
  auto call = InferCall::Create(response);
  call->set_shm_outputs(std::move(decoded->shm_outputs));
  decoded->request->cancel_flag = InferCall::CancelFlag(call);
  if (trace) {
    decoded->request->trace = trace;
    call->set_trace(std::move(trace));
  }
  auto sink = LogDecodedRequest("grpc", "gRPC", *decoded->request, InferCall::MakeSink(call));
  server_.Infer(std::move(decoded->request), std::move(sink));
  if (auto* done = call->FinishIfCompleted(ctx)) return done;
  return call.get();
}

::grpc::ServerBidiReactor<ModelInferRequest, inference::ModelStreamInferResponse>*
InferenceService::ModelStreamInfer(Ctx* ctx) {
  if (auto* denied = DenyStream(ctx, restricted_, ApiGroup::kInference)) return denied;
  return StartStreamInfer(ctx, server_, streams_);
}

::grpc::ServerUnaryReactor* InferenceService::ModelConfig(
    Ctx* ctx, const inference::ModelConfigRequest* request,
    inference::ModelConfigResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kModelConfig)) return denied;
  return WithVersion(ctx, request->version(), [&](int64_t version) {
    auto json = server_.GetModelConfigJson(request->name(), version);
    if (!json.ok()) return json.status();
    // The same effective configuration as HTTP's /config, through its JSON.
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    auto st =
        google::protobuf::util::JsonStringToMessage(*json, response->mutable_config(), options);
    if (!st.ok()) {
      return Internal("model configuration of '" + request->name() +
                      "' could not be converted: " + st.ToString());
    }
    return Status::Ok();
  });
}

::grpc::ServerUnaryReactor* InferenceService::RepositoryIndex(
    Ctx* ctx, const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kModelRepository)) return denied;
  auto index = server_.control().RepositoryIndex(request->repository_name(), request->ready());
  if (!index.ok()) return FinishNow(ctx, index.status());
  for (const auto& e : *index) {
    auto* m = response->add_models();
    m->set_name(e.name);
    if (e.version) m->set_version(std::to_string(*e.version));
    m->set_state(std::string(ModelStateName(e.state)));
    m->set_reason(e.reason);
  }
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::RepositoryModelLoad(
    Ctx* ctx, const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kModelRepository)) return denied;
  auto params = LoadParameters(request->parameters());
  if (!params.ok()) return FinishNow(ctx, params.status());
  auto* reactor = ctx->DefaultReactor();
  server_.control().Load(request->repository_name(), request->model_name(), std::move(*params),
                         FinishWith(reactor));
  return reactor;
}

::grpc::ServerUnaryReactor* InferenceService::RepositoryModelUnload(
    Ctx* ctx, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kModelRepository)) return denied;
  auto params = RepositoryParameters(request->parameters());
  if (!params.ok()) return FinishNow(ctx, params.status());
  auto* reactor = ctx->DefaultReactor();
  server_.control().Unload(request->repository_name(), request->model_name(), *params,
                           FinishWith(reactor));
  return reactor;
}

::grpc::ServerUnaryReactor* InferenceService::ModelStatistics(
    Ctx* ctx, const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kStatistics)) return denied;
  // Empty name: every model; empty version: every ready version.
  return WithVersion(ctx, request->version(), [&](int64_t version) {
    auto all = server_.GetStatistics(request->name(), version);
    if (!all.ok()) return all.status();
    auto set = [](inference::StatisticDuration* out, const DurationStat& d) {
      out->set_count(d.count);
      out->set_ns(d.ns);
    };
    for (const auto& m : *all) {
      const ModelStatsSnapshot& s = m.stats;
      auto* out = response->add_model_stats();
      out->set_name(m.name);
      out->set_version(std::to_string(m.version));
      out->set_last_inference(s.last_inference_ms);
      out->set_inference_count(s.inference_count);
      out->set_execution_count(s.execution_count);
      auto* is = out->mutable_inference_stats();
      set(is->mutable_success(), s.success);
      set(is->mutable_fail(), s.fail);
      set(is->mutable_queue(), s.queue);
      set(is->mutable_compute_input(), s.compute_input);
      set(is->mutable_compute_infer(), s.compute_infer);
      set(is->mutable_compute_output(), s.compute_output);
      set(is->mutable_cache_hit(), s.cache_hit);
      set(is->mutable_cache_miss(), s.cache_miss);
      for (const auto& [size, b] : s.batch_stats) {
        auto* bs = out->add_batch_stats();
        bs->set_batch_size(size);
        set(bs->mutable_compute_input(), b.compute_input);
        set(bs->mutable_compute_infer(), b.compute_infer);
        set(bs->mutable_compute_output(), b.compute_output);
      }
    }
    return Status::Ok();
  });
}

::grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryStatus(
    Ctx* ctx, const inference::SystemSharedMemoryStatusRequest* request,
    inference::SystemSharedMemoryStatusResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  auto regions = server_.control().SystemShmStatus(request->name());
  if (!regions.ok()) return FinishNow(ctx, regions.status());
  for (const RegionStatus& r : *regions) {
    auto& out = (*response->mutable_regions())[r.name];
    out.set_name(r.name);
    out.set_key(r.key);
    out.set_offset(r.offset);
    out.set_byte_size(r.byte_size);
  }
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryRegister(
    Ctx* ctx, const inference::SystemSharedMemoryRegisterRequest* request,
    inference::SystemSharedMemoryRegisterResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  return FinishNow(
      ctx, server_.control().RegisterSystemShm(request->name(), request->key(), request->offset(),
                                               request->byte_size()));
}

::grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryUnregister(
    Ctx* ctx, const inference::SystemSharedMemoryUnregisterRequest* request,
    inference::SystemSharedMemoryUnregisterResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  return FinishNow(ctx, server_.control().UnregisterSystemShm(request->name()));
}

::grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryStatus(
    Ctx* ctx, const inference::CudaSharedMemoryStatusRequest* request,
    inference::CudaSharedMemoryStatusResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  auto status = server_.control().CudaShmStatus(request->name());
  if (!status.ok()) return FinishNow(ctx, status.status());
  for (const auto& r : *status) {
    auto& out = (*response->mutable_regions())[r.name];
    out.set_name(r.name);
    out.set_device_id(static_cast<uint64_t>(r.device_id));
    out.set_byte_size(r.byte_size);
  }
  return FinishNow(ctx, Status::Ok());
}

::grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryRegister(
    Ctx* ctx, const inference::CudaSharedMemoryRegisterRequest* request,
    inference::CudaSharedMemoryRegisterResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  auto* reactor = ctx->DefaultReactor();
  server_.control().RegisterCudaShm(request->name(), request->raw_handle(), request->device_id(),
                                    request->byte_size(), FinishWith(reactor));
  return reactor;
}

::grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryUnregister(
    Ctx* ctx, const inference::CudaSharedMemoryUnregisterRequest* request,
    inference::CudaSharedMemoryUnregisterResponse*) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kSharedMemory)) return denied;
  return FinishNow(ctx, server_.control().UnregisterCudaShm(request->name()));
}

// TraceSetting: grpc_trace.cc.

// ---- HealthService -------------------------------------------------------------

::grpc::ServerUnaryReactor* HealthService::Check(::grpc::CallbackServerContext* ctx,
                                                 const grpc::health::v1::HealthCheckRequest*,
                                                 grpc::health::v1::HealthCheckResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kHealth)) return denied;
  response->set_status(server_.IsReady() ? grpc::health::v1::HealthCheckResponse::SERVING
                                         : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  return FinishNow(ctx, Status::Ok());
}

}  // namespace inferd::grpc_frontend
