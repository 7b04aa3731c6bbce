// The logging extension over gRPC (PROTOCOL.md §2.4.7, docs/logging.md):
// LogSettings applies the request's settings (any of the keys of
// core/log_control.h; log_info/log_warning/log_error bool_param,
// log_verbose_level uint32_param, log_format string_param; a value with no
// case set is ignored, as JSON null over HTTP) and answers all six keys.
// Restricted API group "logging".
#include "core/log_control.h"
#include "frontend/grpc/grpc_codec.h"
#include "frontend/grpc/grpc_services.h"
#include "frontend/grpc/restricted_grpc.h"

namespace inferd::grpc_frontend {
namespace {

using Value = inference::LogSettingsRequest::SettingValue;

LogSettingValue SettingValue(const Value& v) {
  switch (v.parameter_choice_case()) {
    case Value::kBoolParam:
      return v.bool_param();
    case Value::kUint32Param:
      return static_cast<uint64_t>(v.uint32_param());
    case Value::kStringParam:
      return v.string_param();
    case Value::PARAMETER_CHOICE_NOT_SET:
      break;
  }
  return std::monostate{};
}

Status Apply(const inference::LogSettingsRequest& request) {
  LogSettingsChange change(/*grpc=*/true);
  for (const auto& [key, value] : request.settings()) {
    INFERD_RETURN_IF_ERROR(change.Set(key, SettingValue(value)));
  }
  return change.Apply();
}

void Answer(const LogSettings& s, inference::LogSettingsResponse* response) {
  auto& out = *response->mutable_settings();
  out["log_file"].set_string_param(s.file);
  out["log_info"].set_bool_param(s.info);
  out["log_warning"].set_bool_param(s.warning);
  out["log_error"].set_bool_param(s.error);
  out["log_verbose_level"].set_uint32_param(static_cast<uint32_t>(s.verbose));
  out["log_format"].set_string_param(std::string(LogFormatName(s.format)));
}

}  // namespace

::grpc::ServerUnaryReactor* InferenceService::LogSettings(
    Ctx* ctx, const inference::LogSettingsRequest* request,
    inference::LogSettingsResponse* response) {
  if (auto* denied = DenyUnary(ctx, restricted_, ApiGroup::kLogging)) return denied;
  Status s = Apply(*request);
  if (s.ok()) Answer(GetLogSettings(), response);
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace inferd::grpc_frontend
