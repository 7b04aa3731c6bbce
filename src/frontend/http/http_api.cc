#include "frontend/http/http_api.h"

#include <charconv>
#include <cstdlib>

#include "core/base64.h"
#include "core/log.h"
#include "core/request_log.h"
#include "core/sanitize.h"
#include "core/version_string.h"
#include "frontend/http/compression.h"
#include "frontend/http/http_infer_sink.h"
#include "frontend/http/http_trace.h"
#include "frontend/http/infer_codec.h"
#include "frontend/http/json_encode.h"
#include "frontend/http/json_parameters.h"
#include "status/status_service.h"
#include "trace/tracing_sink.h"

namespace inferd::http {
namespace {

// Every semantic error goes through the one code table.
HttpResponse FromStatus(const Status& s) { return StatusResponse(s); }

HttpResponse Json(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

template <typename T, typename Encode>
HttpResponse Encoded(const StatusOr<T>& value, Encode encode) {
  return value.ok() ? Json(encode(*value)) : FromStatus(value.status());
}

// The "parameters" member of a repository call's optional body
// ({"parameters": {...}}), parsed into `d`; nullptr when there is none.
StatusOr<const rapidjson::Value*> BodyParameters(const HttpRequest& req, rapidjson::Document& d) {
  if (!req.body || req.body->empty()) return nullptr;
  d.Parse(req.body->data(), req.body->size());
  if (d.HasParseError() || !d.IsObject()) {
    return InvalidArgument("request body must be a JSON object");
  }
  auto it = d.FindMember("parameters");
  return it == d.MemberEnd() ? nullptr : &it->value;
}

StatusOr<Parameters> RepositoryParameters(const HttpRequest& req) {
  Parameters out;
  rapidjson::Document d;
  auto params = BodyParameters(req, d);
  if (!params.ok()) return params.status();
  if (*params != nullptr) {
    INFERD_RETURN_IF_ERROR(DecodeJsonParameters(**params, "'parameters'", out));
  }
  return out;
}

// One member of a load call's "parameters": a "file:<path>" value is the
// file's content in base64 (Triton's encoding), decoded here so that the
// control plane sees bytes whichever protocol carried them.
StatusOr<ParameterValue> LoadParameterValue(const std::string& key, const rapidjson::Value& value) {
  if (!key.starts_with("file:")) return JsonParameterValue(key, value);
  if (!value.IsString()) {
    return InvalidArgument("load parameter '" + Bounded(key) +
                           "' must be a string holding the file's content in base64");
  }
  auto bytes = Base64Decode(std::string_view(value.GetString(), value.GetStringLength()));
  if (!bytes) {
    return InvalidArgument("load parameter '" + Bounded(key) + "' is not valid base64");
  }
  return ParameterValue(std::move(*bytes));
}

// The optional body of a load call: {"parameters": {...}}. A key given
// twice is refused (JSON would keep one of them silently).
StatusOr<Parameters> LoadParameters(const HttpRequest& req) {
  Parameters out;
  rapidjson::Document d;
  auto found = BodyParameters(req, d);
  if (!found.ok()) return found.status();
  if (*found == nullptr) return out;
  const rapidjson::Value& params = **found;
  if (!params.IsObject()) return InvalidArgument("'parameters' must be an object");
  for (const auto& m : params.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    auto value = LoadParameterValue(key, m.value);
    if (!value.ok()) return value.status();
    if (!out.emplace(key, std::move(*value)).second) {
      return InvalidArgument("duplicate load parameter '" + Bounded(key) + "'");
    }
  }
  return out;
}

}  // namespace

// The API, readable in a minute. Patterns: http_router.h.
const HttpApi::Route HttpApi::kRoutes[] = {
    {"GET", "/v2", &HttpApi::ServerMetadata},
    {"GET", "/v2/health/live", &HttpApi::HealthLive},
    {"GET", "/v2/health/ready", &HttpApi::HealthReady},
    {"GET", "/v2/models/stats", &HttpApi::Statistics},
    {"POST", "/v2/models/{model}[/versions/{version}]/infer", &HttpApi::ModelInfer},
    {"POST", "/v2/models/{model}[/versions/{version}]/generate", &HttpApi::ModelGenerate},
    {"POST", "/v2/models/{model}[/versions/{version}]/generate_stream",
     &HttpApi::ModelGenerateStream},
    {"GET", "/v2/models/{model}[/versions/{version}]", &HttpApi::ModelMetadata},
    {"GET", "/v2/models/{model}[/versions/{version}]/ready", &HttpApi::ModelReady},
    {"GET", "/v2/models/{model}[/versions/{version}]/config", &HttpApi::ModelConfig},
    {"GET", "/v2/models/{model}[/versions/{version}]/stats", &HttpApi::Statistics},
    {"POST", "/v2/repository[/{repo}]/index", &HttpApi::RepositoryIndex},
    {"POST", "/v2/repository[/{repo}]/models/{model}/load", &HttpApi::RepositoryLoad},
    {"POST", "/v2/repository[/{repo}]/models/{model}/unload", &HttpApi::RepositoryUnload},
    {"GET", "/v2/systemsharedmemory[/region/{region}]/status", &HttpApi::SystemShmStatus},
    {"POST", "/v2/systemsharedmemory[/region/{region}]/register", &HttpApi::SystemShmRegister},
    {"POST", "/v2/systemsharedmemory[/region/{region}]/unregister", &HttpApi::SystemShmUnregister},
    {"GET", "/v2/trace/setting", &HttpApi::TraceSetting},
    {"POST", "/v2/trace/setting", &HttpApi::TraceSetting},
    {"GET", "/v2/models/{model}/trace/setting", &HttpApi::TraceSetting},
    {"POST", "/v2/models/{model}/trace/setting", &HttpApi::TraceSetting},
    {"GET", "/v2/cudasharedmemory[/region/{region}]/status", &HttpApi::CudaShmStatus},
    {"POST", "/v2/cudasharedmemory[/region/{region}]/register", &HttpApi::CudaShmRegister},
    {"POST", "/v2/cudasharedmemory[/region/{region}]/unregister", &HttpApi::CudaShmUnregister},
    {"GET", "/v2/logging", &HttpApi::Logging},
    {"POST", "/v2/logging", &HttpApi::Logging},
    // inferd's own: the status page and its JSON (docs/status_page.md).
    {"GET", "/", &HttpApi::StatusPage},
    {"GET", "/inferd/status", &HttpApi::StatusJson},
};

HttpApi::HttpApi(InferenceServer& server, HttpApiOptions options)
    : server_(server), options_(std::move(options)) {
  for (size_t i = 0; i < std::size(kRoutes); ++i) {
    Status s = router_.Add(kRoutes[i].method, kRoutes[i].pattern, i);
    if (!s.ok()) std::abort();  // a typo in the table above, caught by every test
  }
  if (options_.status_page) status_ = std::make_unique<status::StatusService>(server_);
}

void HttpApi::Handle(HttpRequest req, const std::shared_ptr<HttpResponder>& responder) {
  INFERD_VLOG_CTX(2, "http") << "HTTP " << EscapeControl(Bounded(req.method)) << " "
                             << EscapeControl(Bounded(req.path));
  if (!options_.restricted.empty()) {
    if (auto group = HttpApiGroup(req.path)) {  // --http-restricted-api
      Status allowed = options_.restricted.Check(*group, [&](std::string_view key) {
        const std::string* v = req.Header(key);
        return v ? std::optional<std::string_view>(*v) : std::nullopt;
      });
      if (!allowed.ok()) return responder->Send(FromStatus(allowed));
    }
  }
  const RouteMatch m = router_.Match(req.method, req.path);
  switch (m.result) {
    // Routing answers: with health's and model ready's 400 below (Triton's
    // endpoint semantics), the only literal status codes of the API.
    case RouteMatch::Result::kNotFound:
      return responder->Send(ErrorResponse(404, "Not Found"));
    case RouteMatch::Result::kMethodNotAllowed:
      return responder->Send(ErrorResponse(405, "Method Not Allowed"));
    case RouteMatch::Result::kBadPath:
      return responder->Send(FromStatus(m.error));
    case RouteMatch::Result::kFound:
      return (this->*kRoutes[m.route].handler)(req, m.params, responder);
  }
}

// ---- server and model metadata, health -------------------------------------------

void HttpApi::ServerMetadata(const HttpRequest&, const PathParams&, const Responder& r) {
  // The generate extension is HTTP's alone, so HTTP adds it to the list.
  std::vector<std::string> extensions = server_.Extensions();
  extensions.push_back("generate");
  r->Send(Json(EncodeServerMetadata(server_.id(), InferenceServer::Version(), extensions)));
}

// Triton's health semantics: "not live/ready" is a 400 with the JSON
// answer, not an error Status (the call itself succeeded).
void HttpApi::HealthLive(const HttpRequest&, const PathParams&, const Responder& r) {
  HttpResponse resp = Json(EncodeHealth("live", server_.IsLive()));
  if (!server_.IsLive()) resp.status = 400;
  r->Send(std::move(resp));
}

void HttpApi::HealthReady(const HttpRequest&, const PathParams&, const Responder& r) {
  if (server_.IsShuttingDown()) return r->Send(FromStatus(Unavailable("Server exiting")));
  const bool ready = server_.IsReady();
  HttpResponse resp = Json(EncodeHealth("ready", ready));
  if (!ready) resp.status = 400;
  r->Send(std::move(resp));
}

void HttpApi::ModelMetadata(const HttpRequest&, const PathParams& p, const Responder& r) {
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return r->Send(FromStatus(version.status()));
  r->Send(Encoded(server_.GetModelMetadata(p.model, *version), EncodeModelMetadata));
}

void HttpApi::ModelReady(const HttpRequest&, const PathParams& p, const Responder& r) {
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return r->Send(FromStatus(version.status()));
  auto ready = server_.ModelReady(p.model, *version);
  if (!ready.ok()) return r->Send(FromStatus(ready.status()));
  // Triton's model-ready semantics: a known model that is not ready is a 400.
  if (!*ready) return r->Send(ErrorResponse(400, "Model version not ready"));
  r->Send(Json(EncodeModelReady(p.model, true)));
}

void HttpApi::ModelConfig(const HttpRequest&, const PathParams& p, const Responder& r) {
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return r->Send(FromStatus(version.status()));
  r->Send(Encoded(server_.GetModelConfigJson(p.model, *version),
                  [](const std::string& json) { return json; }));
}

// /v2/models/stats (every model) and /v2/models/{model}[/versions/{v}]/stats.
void HttpApi::Statistics(const HttpRequest&, const PathParams& p, const Responder& r) {
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return r->Send(FromStatus(version.status()));
  r->Send(Encoded(server_.GetStatistics(p.model, *version), EncodeStatistics));
}

void HttpApi::ModelInfer(const HttpRequest& req, const PathParams& p, const Responder& r) {
  auto version = ParseModelVersion(p.version);
  if (!version.ok()) return r->Send(FromStatus(version.status()));
  HandleInfer(req, p.model, *version, r);
}

// ---- inference -----------------------------------------------------------------------

void HttpApi::HandleInfer(const HttpRequest& req, const std::string& model, int64_t version,
                          std::shared_ptr<HttpResponder> responder) {
  auto fail = [&](const Status& s) {
    LogRefusedRequest("http", "HTTP", model, s);
    responder->Send(FromStatus(s));
  };
  // An unknown model is reported as such, whatever the body holds.
  if (Status m = server_.CheckModel(model, version); !m.ok()) return fail(m);
  std::shared_ptr<std::string> body = req.body;
  if (const std::string* ce = req.Header("Content-Encoding");
      ce && !ce->empty() && *ce != "identity") {
    if (*ce != "gzip" && *ce != "deflate") {
      HttpResponse r =
          FromStatus(Unimplemented("Unsupported compression type '" + Bounded(*ce) + "'"));
      r.headers.emplace_back("Accept-Encoding", "gzip, deflate");
      return responder->Send(std::move(r));
    }
    auto inflated = Inflate(*body, options_.max_input_size);
    if (!inflated.ok()) return fail(inflated.status());
    body = std::make_shared<std::string>(std::move(*inflated));
  }
  std::optional<size_t> header_length;
  if (const std::string* h = req.Header("Inference-Header-Content-Length")) {
    size_t n = 0;
    auto [p, ec] = std::from_chars(h->data(), h->data() + h->size(), n);
    if (ec != std::errc() || p != h->data() + h->size()) {
      return fail(InvalidArgument("Inference-Header-Content-Length '" + Bounded(*h) +
                                  "' is not a non-negative integer"));
    }
    header_length = n;
  }
  StatusOr<DecodedInfer> decoded = Internal("unset");
  if (header_length && *header_length == 0) {
    auto spec = server_.GetModelSpec(model, version);
    if (!spec.ok()) return fail(spec.status());
    decoded = DecodeRawBinaryRequest(body, *spec, version);
  } else {
    DecodeLimits limits;
    limits.max_json_depth = options_.max_json_depth;
    limits.max_inputs = server_.request_limits().max_inputs;
    limits.max_outputs = server_.request_limits().max_outputs;
    limits.max_bytes_elements = server_.request_limits().max_bytes_elements;
    decoded =
        DecodeInferRequest(body, header_length, model, version, limits, &server_.shared_memory());
  }
  if (!decoded.ok()) return fail(decoded.status());
  decoded->request->cancel_flag = req.cancelled;
  // One response per call: a decoupled model is refused (Triton's text).
  decoded->request->decoupled_refusal =
      "HTTP end point doesn't support models with decoupled transaction policy";
  const std::string* accept = req.Header("Accept-Encoding");
  const Encoding encoding = accept ? ChooseEncoding(*accept) : Encoding::kIdentity;
  std::unique_ptr<InferResponseSink> sink =
      std::make_unique<HttpInferSink>(std::move(responder), std::move(decoded->encoding), encoding);
  if (server_.tracer().Active()) {  // tracing off: this load is all it costs
    if (auto trace = SampleHttpRequest(server_.tracer(), req, model)) {
      decoded->request->trace = trace;
      sink = std::make_unique<trace::FrontendTraceSink>(std::move(sink), std::move(trace),
                                                        trace::activity::kHttpSendStart,
                                                        trace::activity::kHttpSendEnd);
    }
  }
  auto logged = LogDecodedRequest("http", "HTTP", *decoded->request, std::move(sink));
  server_.Infer(std::move(decoded->request), std::move(logged));
}

// ---- repository extension (through the control plane) ------------------------------

void HttpApi::RepositoryIndex(const HttpRequest& req, const PathParams& p, const Responder& r) {
  bool ready_only = false;
  if (req.body && !req.body->empty()) {
    rapidjson::Document d;
    d.Parse(req.body->data(), req.body->size());
    if (d.HasParseError() || !d.IsObject()) {
      return r->Send(FromStatus(InvalidArgument("repository index body must be a JSON object")));
    }
    if (d.HasMember("ready")) {
      if (!d["ready"].IsBool()) {
        return r->Send(
            FromStatus(InvalidArgument("Invalid value for 'ready': expected a boolean")));
      }
      ready_only = d["ready"].GetBool();
    }
  }
  r->Send(Encoded(server_.control().RepositoryIndex(p.repo, ready_only), EncodeRepositoryIndex));
}

void HttpApi::RepositoryLoad(const HttpRequest& req, const PathParams& p, const Responder& r) {
  auto params = LoadParameters(req);
  if (!params.ok()) return r->Send(FromStatus(params.status()));
  server_.control().Load(p.repo, p.model, std::move(*params),
                         [r](const Status& s) { r->Send(StatusResponse(s)); });
}

void HttpApi::RepositoryUnload(const HttpRequest& req, const PathParams& p, const Responder& r) {
  auto params = RepositoryParameters(req);
  if (!params.ok()) return r->Send(FromStatus(params.status()));
  server_.control().Unload(p.repo, p.model, *params,
                           [r](const Status& s) { r->Send(StatusResponse(s)); });
}

// ---- shared memory (through the control plane) ---------------------------------------

void HttpApi::SystemShmStatus(const HttpRequest&, const PathParams& p, const Responder& r) {
  r->Send(Encoded(server_.control().SystemShmStatus(p.region), EncodeSystemShmStatus));
}

void HttpApi::SystemShmRegister(const HttpRequest& req, const PathParams& p, const Responder& r) {
  // "Disabled" comes before any complaint about the body.
  if (Status s = server_.control().CheckClientShm(); !s.ok()) return r->Send(FromStatus(s));
  rapidjson::Document d;
  d.Parse(req.body ? req.body->c_str() : "", req.body ? req.body->size() : 0);
  auto fail = [&](const char* message) { r->Send(FromStatus(InvalidArgument(message))); };
  if (d.HasParseError() || !d.IsObject()) {
    return fail("register body must be a JSON object with 'key' and 'byte_size'");
  }
  if (!d.HasMember("key") || !d["key"].IsString()) {
    return fail("register needs a 'key' string (the shared memory object name)");
  }
  if (!d.HasMember("byte_size") || !d["byte_size"].IsUint64()) {
    return fail("register needs 'byte_size', a non-negative integer");
  }
  uint64_t offset = 0;
  if (d.HasMember("offset")) {
    if (!d["offset"].IsUint64()) return fail("'offset' must be a non-negative integer");
    offset = d["offset"].GetUint64();
  }
  r->Send(StatusResponse(server_.control().RegisterSystemShm(
      p.region, std::string(d["key"].GetString(), d["key"].GetStringLength()), offset,
      d["byte_size"].GetUint64())));
}

void HttpApi::SystemShmUnregister(const HttpRequest&, const PathParams& p, const Responder& r) {
  r->Send(StatusResponse(server_.control().UnregisterSystemShm(p.region)));
}

void HttpApi::CudaShmStatus(const HttpRequest&, const PathParams& p, const Responder& r) {
  r->Send(Encoded(server_.control().CudaShmStatus(p.region), EncodeCudaShmStatus));
}

void HttpApi::CudaShmUnregister(const HttpRequest&, const PathParams& p, const Responder& r) {
  r->Send(StatusResponse(server_.control().UnregisterCudaShm(p.region)));
}

}  // namespace inferd::http
