// HttpApi: the KServe v2 / Triton REST API on top of InferenceServer. A
// route table plus one small handler per endpoint; all parsing and
// encoding of bodies lives here or in infer_codec, never in the core.
//
// Threading: Handle() runs on an I/O thread and never blocks on a model;
// inference responses are sent from the completion (an instance thread).
// Repository load/unload may take long, so they run on a separate thread.
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <optional>
#include <string>

#include "frontend/http/http_types.h"
#include "frontend/restricted_api.h"
#include "server/inference_server.h"

namespace inferd::http {

struct HttpApiOptions {
  size_t max_input_size = 64 << 20;  // also bounds a decompressed body
  size_t max_json_depth = 100;       // --http-max-json-depth
  RestrictedApis restricted;         // --http-restricted-api
};

class HttpApi {
 public:
  HttpApi(InferenceServer& server, HttpApiOptions options);
  void Handle(HttpRequest request, std::shared_ptr<HttpResponder> responder);

 private:
  void HandleModel(const HttpRequest& req, const std::string& model, int64_t version,
                   const std::string& action, std::shared_ptr<HttpResponder> responder);
  void HandleInfer(const HttpRequest& req, const std::string& model, int64_t version,
                   std::shared_ptr<HttpResponder> responder);
  void HandleRepository(const HttpRequest& req, const std::vector<std::string>& segments,
                        std::shared_ptr<HttpResponder> responder);
  // /v2/systemsharedmemory/... and /v2/cudasharedmemory/...
  HttpResponse HandleSharedMemory(const HttpRequest& req, const std::vector<std::string>& segments);
  HttpResponse RegisterCudaSharedMemory(const std::string& name, const rapidjson::Document& body);

  InferenceServer& server_;
  const HttpApiOptions options_;
};

// Percent-decodes a path segment; nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s);

}  // namespace inferd::http
