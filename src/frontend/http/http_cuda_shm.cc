// The CUDA shared-memory register route (PROTOCOL.md §1.11): the body's
// fields, checked and decoded, for ControlPlane::RegisterCudaShm (which
// opens the handle on its worker and answers there).
#include "core/base64.h"
#include "frontend/http/http_api.h"

namespace inferd::http {

void HttpApi::CudaShmRegister(const HttpRequest& req, const PathParams& p, const Responder& r) {
  // "Disabled" comes before any complaint about the body.
  if (Status s = server_.control().CheckClientShm(); !s.ok()) return r->Send(StatusResponse(s));
  auto fail = [&](const char* message) { r->Send(StatusResponse(InvalidArgument(message))); };
  // {"raw_handle": {"b64": <base64 of the cudaIpcMemHandle_t>}, "device_id": int,
  //  "byte_size": uint}
  rapidjson::Document d;
  d.Parse(req.body ? req.body->c_str() : "", req.body ? req.body->size() : 0);
  if (d.HasParseError() || !d.IsObject()) {
    return fail(
        "register body must be a JSON object with 'raw_handle', 'device_id' and 'byte_size'");
  }
  if (!d.HasMember("raw_handle") || !d["raw_handle"].IsObject() ||
      !d["raw_handle"].HasMember("b64") || !d["raw_handle"]["b64"].IsString()) {
    return fail("register needs 'raw_handle': {\"b64\": <base64 string>}");
  }
  if (!d.HasMember("device_id") || !d["device_id"].IsInt64()) {
    return fail("register needs 'device_id', an integer");
  }
  if (!d.HasMember("byte_size") || !d["byte_size"].IsUint64()) {
    return fail("register needs 'byte_size', a non-negative integer");
  }
  const auto& b64 = d["raw_handle"]["b64"];
  auto handle = Base64Decode(std::string_view(b64.GetString(), b64.GetStringLength()));
  if (!handle) return fail("'raw_handle.b64' is not valid base64");
  server_.control().RegisterCudaShm(p.region, std::move(*handle), d["device_id"].GetInt64(),
                                    d["byte_size"].GetUint64(),
                                    [r](const Status& s) { r->Send(StatusResponse(s)); });
}

}  // namespace inferd::http
