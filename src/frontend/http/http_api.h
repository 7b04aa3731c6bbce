// HttpApi: the KServe v2 / Triton REST API on top of InferenceServer. A
// route table (method + path pattern -> handler, http_api.cc) on the
// HttpRouter, and one small handler per endpoint. Bodies are parsed and
// encoded here, in infer_codec (inference) and json_encode (the other JSON
// answers); repository and shared-memory calls go to the server's
// ControlPlane, which answers them as it answers gRPC.
//
// Errors: every semantic error is a Status, sent with the status code of
// HttpStatusFromCode (the one code table). Literal codes are only the
// router's 404 / 405 and the health/ready endpoints' 400 for "not ready"
// (Triton's endpoint semantics).
//
// Threading: Handle() runs on an I/O thread and never blocks on a model or
// a load: inference responses are sent by the request's sink (HttpInferSink,
// on an instance thread), load/unload and CUDA registration answers from the
// control plane's worker.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "frontend/http/http_router.h"
#include "frontend/http/http_types.h"
#include "frontend/restricted_api.h"
#include "server/inference_server.h"

namespace inferd::status {
class StatusService;
}

namespace inferd::http {

struct HttpApiOptions {
  size_t max_input_size = 64 << 20;  // also bounds a decompressed body
  size_t max_json_depth = 100;       // --http-max-json-depth
  RestrictedApis restricted;         // --http-restricted-api
  // GET / (the status page) and GET /inferd/status (its JSON); false: both
  // 404 and no sampler thread (--status-page=false; docs/status_page.md).
  bool status_page = true;
};

class HttpApi {
 public:
  HttpApi(InferenceServer& server, HttpApiOptions options);
  ~HttpApi();  // http_status.cc: stops the status page's sampler
  void Handle(HttpRequest request, const std::shared_ptr<HttpResponder>& responder);

 private:
  using Responder = std::shared_ptr<HttpResponder>;
  using Handler = void (HttpApi::*)(const HttpRequest&, const PathParams&, const Responder&);
  struct Route {
    const char* method;
    const char* pattern;
    Handler handler;
  };
  static const Route kRoutes[];

  void ServerMetadata(const HttpRequest&, const PathParams&, const Responder&);
  void HealthLive(const HttpRequest&, const PathParams&, const Responder&);
  void HealthReady(const HttpRequest&, const PathParams&, const Responder&);
  void ModelMetadata(const HttpRequest&, const PathParams&, const Responder&);
  void ModelReady(const HttpRequest&, const PathParams&, const Responder&);
  void ModelConfig(const HttpRequest&, const PathParams&, const Responder&);
  void ModelInfer(const HttpRequest&, const PathParams&, const Responder&);
  // Generate extension (http_generate.cc).
  void ModelGenerate(const HttpRequest&, const PathParams&, const Responder&);
  void ModelGenerateStream(const HttpRequest&, const PathParams&, const Responder&);
  void HandleGenerate(const HttpRequest& req, const PathParams& p, const Responder& responder,
                      bool stream);
  void Statistics(const HttpRequest&, const PathParams&, const Responder&);
  // Trace extension (http_trace.cc).
  void TraceSetting(const HttpRequest&, const PathParams&, const Responder&);
  void RepositoryIndex(const HttpRequest&, const PathParams&, const Responder&);
  void RepositoryLoad(const HttpRequest&, const PathParams&, const Responder&);
  void RepositoryUnload(const HttpRequest&, const PathParams&, const Responder&);
  void SystemShmStatus(const HttpRequest&, const PathParams&, const Responder&);
  void SystemShmRegister(const HttpRequest&, const PathParams&, const Responder&);
  void SystemShmUnregister(const HttpRequest&, const PathParams&, const Responder&);
  void CudaShmStatus(const HttpRequest&, const PathParams&, const Responder&);
  void CudaShmRegister(const HttpRequest&, const PathParams&,
                       const Responder&);  // http_cuda_shm.cc
  void CudaShmUnregister(const HttpRequest&, const PathParams&, const Responder&);
  // Logging extension, GET and POST (http_logging.cc).
  void Logging(const HttpRequest&, const PathParams&, const Responder&);
  // The status page and its JSON (http_status.cc).
  void StatusPage(const HttpRequest&, const PathParams&, const Responder&);
  void StatusJson(const HttpRequest&, const PathParams&, const Responder&);

  void HandleInfer(const HttpRequest& req, const std::string& model, int64_t version,
                   std::shared_ptr<HttpResponder> responder);

  InferenceServer& server_;
  const HttpApiOptions options_;
  HttpRouter router_;
  std::unique_ptr<status::StatusService> status_;  // null with status_page off
};

}  // namespace inferd::http
