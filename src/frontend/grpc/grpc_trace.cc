#include "frontend/grpc/grpc_trace.h"

#include "frontend/grpc/grpc_codec.h"
#include "frontend/grpc/grpc_services.h"
#include "frontend/grpc/restricted_grpc.h"
#include "trace/trace_context.h"
#include "trace/trace_settings_api.h"

namespace inferd::grpc_frontend {

std::optional<trace::TraceContext> GrpcTraceContext(const ::grpc::ServerContextBase& ctx) {
  const auto& md = ctx.client_metadata();  // keys are lower case on the wire
  auto parents = md.equal_range("traceparent");
  if (parents.first == parents.second || std::next(parents.first) != parents.second) {
    return std::nullopt;  // none, or two: start a new trace
  }
  auto ctx_out = trace::ParseTraceparent(
      std::string_view(parents.first->second.data(), parents.first->second.size()));
  if (!ctx_out) return std::nullopt;
  std::string state;
  auto states = md.equal_range("tracestate");
  for (auto it = states.first; it != states.second; ++it) {
    if (!state.empty()) state.push_back(',');
    state.append(it->second.data(), it->second.size());
  }
  if (!state.empty()) ctx_out->trace_state = trace::ParseTraceState(state);
  return ctx_out;
}

std::shared_ptr<trace::RequestTrace> SampleGrpcRequest(
    trace::Tracer& tracer, const std::optional<trace::TraceContext>& context,
    const std::string& model, std::chrono::steady_clock::time_point received) {
  auto t = tracer.Sample(
      model, tracer.mode() == trace::TraceMode::kOpenTelemetry ? context : std::nullopt);
  if (!t) return t;
  t->Stamp(trace::activity::kGrpcWaitReadStart, received);
  t->Stamp(trace::activity::kGrpcWaitReadEnd, received);
  return t;
}

// Keys as over HTTP (PROTOCOL.md §2.4.7): an empty value list clears.
::grpc::ServerUnaryReactor* InferenceService::TraceSetting(
    Ctx* ctx, const inference::TraceSettingRequest* request,
    inference::TraceSettingResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kTrace)) return denied;
  auto finish = [ctx](const Status& s) {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpcStatus(s));
    return reactor;
  };
  const std::string& model = request->model_name();
  if (!model.empty()) {
    auto ready = server_.ModelReady(model, -1);
    if (!ready.ok() || !*ready) {
      return finish(InvalidArgument("Request for unknown model : " + model));
    }
  }
  trace::Tracer& tracer = server_.tracer();
  if (!request->settings().empty()) {
    std::vector<trace::TraceSettingInput> input;
    for (const auto& [key, value] : request->settings()) {
      if (value.value().empty()) {
        input.emplace_back(key, std::nullopt);
      } else {
        input.emplace_back(key,
                           std::vector<std::string>(value.value().begin(), value.value().end()));
      }
    }
    auto update = trace::ParseTraceSettingUpdate(input);
    if (!update.ok()) return finish(update.status());
    if (Status s = tracer.Update(model, *update); !s.ok()) return finish(s);
  }
  for (auto& [key, values] : trace::TraceSettingResponse(tracer.Get(model), tracer.config())) {
    auto& out = (*response->mutable_settings())[key];
    for (auto& v : values) out.add_value(std::move(v));
  }
  return finish(Status::Ok());
}

}  // namespace inferd::grpc_frontend
