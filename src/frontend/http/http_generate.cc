// The generate extension's handlers (HttpApi::ModelGenerate and
// ModelGenerateStream; routes in http_api.cc): checks, decoding through
// generate_codec, and the request handed to the server with its sink
// (generate_sink.h). Errors before inference are plain JSON error bodies.
#include "core/request_log.h"
#include "core/version_string.h"
#include "frontend/http/generate_codec.h"
#include "frontend/http/generate_sink.h"
#include "frontend/http/http_api.h"

namespace inferd::http {

void HttpApi::ModelGenerate(const HttpRequest& req, const PathParams& p, const Responder& r) {
  HandleGenerate(req, p, r, /*stream=*/false);
}

void HttpApi::ModelGenerateStream(const HttpRequest& req, const PathParams& p, const Responder& r) {
  HandleGenerate(req, p, r, /*stream=*/true);
}

void HttpApi::HandleGenerate(const HttpRequest& req, const PathParams& p,
                             const Responder& responder, bool stream) {
  auto fail = [&](const Status& s) { responder->Send(StatusResponse(s)); };
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return fail(version.status());
  // An unknown model is reported as such, whatever the body holds.
  if (Status m = server_.CheckModel(p.model, *version); !m.ok()) return fail(m);
  if (const std::string* ce = req.Header("Content-Encoding");
      ce && !ce->empty() && *ce != "identity") {
    return fail(InvalidArgument("Unsupported content-encoding, only 'identity' is supported."));
  }
  auto spec = server_.GetModelSpec(p.model, *version);
  if (!spec.ok()) return fail(spec.status());
  GenerateLimits limits;
  limits.max_input_bytes = options_.max_input_size;
  limits.max_json_depth = options_.max_json_depth;
  limits.max_bytes_elements = server_.request_limits().max_bytes_elements;
  auto request = DecodeGenerateRequest(req.body ? std::string_view(*req.body) : std::string_view(),
                                       *spec, p.model, *version, limits);
  if (!request.ok()) return fail(request.status());
  (*request)->cancel_flag = req.cancelled;  // a client that leaves cancels the request
  if (!stream) {
    auto sink = LogDecodedRequest("http", "HTTP generate", **request,
                                  std::make_unique<GenerateSink>(responder));
    return server_.Infer(std::move(*request), std::move(sink));
  }
  auto sink = std::make_unique<GenerateStreamSink>(responder);
  auto returned = sink->handler_returned();
  auto logged = LogDecodedRequest("http", "HTTP generate_stream", **request, std::move(sink));
  server_.Infer(std::move(*request), std::move(logged));
  returned->store(true);
}

}  // namespace inferd::http
