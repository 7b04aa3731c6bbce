#include "frontend/grpc/restricted_grpc.h"

#include "frontend/grpc/grpc_codec.h"

namespace inferd::grpc_frontend {
namespace {

// Finishes in its constructor; gRPC calls OnDone once the status is sent.
class DeniedStream final : public ::grpc::ServerBidiReactor<inference::ModelInferRequest,
                                                            inference::ModelStreamInferResponse> {
 public:
  explicit DeniedStream(const Status& s) { Finish(ToGrpcStatus(s)); }
  void OnDone() override { delete this; }
};

}  // namespace

Status CheckRestricted(const ::grpc::CallbackServerContext* ctx, const RestrictedApis& apis,
                       ApiGroup group) {
  return apis.Check(group, [ctx](std::string_view key) -> std::optional<std::string_view> {
    const auto& md = ctx->client_metadata();
    auto it = md.find(::grpc::string_ref(key.data(), key.size()));
    if (it == md.end()) return std::nullopt;
    return std::string_view(it->second.data(), it->second.size());
  });
}

::grpc::ServerUnaryReactor* DenyUnary(::grpc::CallbackServerContext* ctx,
                                      const RestrictedApis& apis, ApiGroup group) {
  Status s = CheckRestricted(ctx, apis, group);
  if (s.ok()) return nullptr;
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
DenyStream(::grpc::CallbackServerContext* ctx, const RestrictedApis& apis, ApiGroup group) {
  Status s = CheckRestricted(ctx, apis, group);
  if (s.ok()) return nullptr;
  return new DeniedStream(s);
}

}  // namespace inferd::grpc_frontend
