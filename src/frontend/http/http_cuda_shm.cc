// The CUDA shared-memory register route (PROTOCOL.md §1.11): the body's
// fields, checked and decoded, for InferenceServer::RegisterCudaSharedMemory.
// status/unregister share HandleSharedMemory with system regions.
#include "core/base64.h"
#include "frontend/http/http_api.h"

namespace inferd::http {

HttpResponse HttpApi::RegisterCudaSharedMemory(const std::string& name,
                                               const rapidjson::Document& d) {
  // {"raw_handle": {"b64": <base64 of the cudaIpcMemHandle_t>}, "device_id": uint,
  //  "byte_size": uint}
  if (d.HasParseError() || !d.IsObject()) {
    return ErrorResponse(400,
                         "register body must be a JSON object with 'raw_handle', 'device_id' "
                         "and 'byte_size'");
  }
  if (!d.HasMember("raw_handle") || !d["raw_handle"].IsObject() ||
      !d["raw_handle"].HasMember("b64") || !d["raw_handle"]["b64"].IsString()) {
    return ErrorResponse(400, "register needs 'raw_handle': {\"b64\": <base64 string>}");
  }
  if (!d.HasMember("device_id") || !d["device_id"].IsUint64()) {
    return ErrorResponse(400, "register needs 'device_id', a non-negative integer");
  }
  if (!d.HasMember("byte_size") || !d["byte_size"].IsUint64()) {
    return ErrorResponse(400, "register needs 'byte_size', a non-negative integer");
  }
  const auto& b64 = d["raw_handle"]["b64"];
  auto handle = Base64Decode(std::string_view(b64.GetString(), b64.GetStringLength()));
  if (!handle) return ErrorResponse(400, "'raw_handle.b64' is not valid base64");
  const uint64_t device = d["device_id"].GetUint64();
  if (device > static_cast<uint64_t>(INT32_MAX)) {
    return ErrorResponse(400, "'device_id' " + std::to_string(device) + " is out of range");
  }
  Status s = server_.RegisterCudaSharedMemory(name, *handle, static_cast<int64_t>(device),
                                              d["byte_size"].GetUint64());
  return s.ok() ? HttpResponse{} : ErrorResponse(HttpStatusFromCode(s.code()), s.message());
}

}  // namespace inferd::http
