#include "frontend/http/json_parameters.h"

#include <string>

#include "core/sanitize.h"

namespace inferd::http {

StatusOr<ParameterValue> JsonParameterValue(std::string_view key, const rapidjson::Value& v) {
  if (v.IsString()) return ParameterValue(std::string(v.GetString(), v.GetStringLength()));
  if (v.IsBool()) return ParameterValue(v.GetBool());
  if (v.IsInt64()) return ParameterValue(v.GetInt64());
  if (v.IsUint64()) return ParameterValue(v.GetUint64());
  if (v.IsNumber()) return ParameterValue(v.GetDouble());
  return InvalidArgument("parameter '" + Bounded(key) +
                         "' has invalid type. It should be either 'int', 'bool', or 'string'.");
}

Status DecodeJsonParameters(const rapidjson::Value& params, std::string_view where, Parameters& out,
                            std::string_view skip) {
  if (!params.IsObject()) return InvalidArgument(std::string(where) + " must be an object");
  for (const auto& m : params.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    if (!skip.empty() && key == skip) continue;
    auto value = JsonParameterValue(key, m.value);
    if (!value.ok()) return value.status();
    out[std::move(key)] = std::move(*value);
  }
  return Status::Ok();
}

}  // namespace inferd::http
