// The batcher's HTTP front end: KServe v2 infer (JSON and the binary tensor
// extension) through inferd's own codec, and the health endpoints.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>

#include "batcher/batcher.h"
#include "batcher/http_convert.h"
#include "core/sanitize.h"
#include "core/utf8.h"
#include "core/version_string.h"
#include "frontend/http/compression.h"
#include "frontend/http/infer_codec.h"

namespace inferd::batcher {
namespace {

using Async = middleman::InferdStub::async_interface;

// inferd's HTTP refusal of a decoupled model (frontend/http/http_api.cc).
constexpr char kHttpDecoupledRefusal[] =
    "HTTP end point doesn't support models with decoupled transaction policy";

// inferd's health body (frontend/http/json_encode.cc EncodeHealth).
std::string Health(const char* key, bool value) {
  return std::string("{\"") + key + "\":" + (value ? "true" : "false") + "}";
}

http::HttpResponse JsonResponse(std::string body, int status = 200) {
  http::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// The answer inferd's HttpInferSink would send for `response`.
http::HttpResponse Encode(const std::shared_ptr<const inference::ModelInferResponse>& response,
                          const http::OutputEncoding& encoding, http::Encoding compression) {
  auto core = FromModelInferResponse(response);
  if (!core.ok()) return http::StatusResponse(core.status());
  auto encoded = http::EncodeInferResponse(**core, encoding);
  if (!encoded.ok()) return http::StatusResponse(encoded.status());
  http::HttpResponse r;
  if (encoded->header_length) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length",
                           std::to_string(*encoded->header_length));
  }
  r.body = std::move(encoded->body);
  if (compression != http::Encoding::kIdentity) {
    auto z = http::Compress(r.body, compression);
    if (z.ok()) {
      r.body = std::move(*z);
      r.headers.emplace_back("Content-Encoding",
                             compression == http::Encoding::kGzip ? "gzip" : "deflate");
    }
  }
  return r;
}

// The body, inflated when the client compressed it; the error answer else.
StatusOr<std::shared_ptr<const std::string>> Body(const http::HttpRequest& req, size_t max_bytes) {
  std::shared_ptr<const std::string> body = req.body;
  if (!body) body = std::make_shared<const std::string>();
  const std::string* ce = req.Header("Content-Encoding");
  if (ce == nullptr || ce->empty() || *ce == "identity") return body;
  if (*ce != "gzip" && *ce != "deflate") {
    return Unimplemented("Unsupported compression type '" + Bounded(*ce) + "'");
  }
  auto inflated = http::Inflate(*body, max_bytes);
  if (!inflated.ok()) return inflated.status();
  return std::shared_ptr<const std::string>(std::make_shared<std::string>(std::move(*inflated)));
}

StatusOr<http::DecodedInfer> Decode(const http::HttpRequest& req,
                                    const std::shared_ptr<const std::string>& body,
                                    const std::string& model, int64_t version) {
  std::optional<size_t> header_length;
  if (const std::string* h = req.Header("Inference-Header-Content-Length")) {
    size_t n = 0;
    auto [p, ec] = std::from_chars(h->data(), h->data() + h->size(), n);
    if (ec != std::errc() || p != h->data() + h->size()) {
      return InvalidArgument("Inference-Header-Content-Length '" + Bounded(*h) +
                             "' is not a non-negative integer");
    }
    header_length = n;
  }
  if (header_length && *header_length == 0) {
    return Unimplemented(
        "infer-batcher does not take raw binary requests (Inference-Header-Content-Length: 0): "
        "send the JSON header with the binary tensor extension, or call inferd directly");
  }
  return http::DecodeInferRequest(body, header_length, model, version, http::DecodeLimits{});
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// A string as inferd's JSON encoders write it (frontend/http/json_encode.cc):
// bytes that are not UTF-8 escaped.
void JsonString(JsonWriter& w, std::string_view s) {
  const std::string text = EscapeInvalidUtf8(s);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void JsonTensors(
    JsonWriter& w, const char* key,
    const google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>&
        tensors) {
  w.Key(key);
  w.StartArray();
  for (const auto& t : tensors) {
    w.StartObject();
    w.Key("name");
    JsonString(w, t.name());
    w.Key("datatype");
    JsonString(w, t.datatype());
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape()) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

// inferd's HTTP model metadata body (json_encode.cc EncodeModelMetadata).
std::string MetadataJson(const inference::ModelMetadataResponse& md) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("name");
  JsonString(w, md.name());
  w.Key("versions");
  w.StartArray();
  for (const auto& v : md.versions()) JsonString(w, v);
  w.EndArray();
  w.Key("platform");
  JsonString(w, md.platform());
  JsonTensors(w, "inputs", md.inputs());
  JsonTensors(w, "outputs", md.outputs());
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

// inferd's HTTP model ready body (json_encode.cc EncodeModelReady).
std::string ReadyJson(std::string_view model) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("name");
  JsonString(w, model);
  w.Key("ready");
  w.Bool(true);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

void Batcher::HandleHttpModel(const middleman::Request& request,
                              const middleman::Responder& responder, bool ready) {
  const std::string version = request.params.size() > 1 ? request.params[1] : "";
  if (auto v = ParseModelVersion(version); !v.ok()) {
    return responder->Send(http::StatusResponse(v.status()));
  }
  middleman::CallOptions call;
  call.cancelled = request.http.cancelled;
  call.trace = request.trace;
  auto fail = [responder](const ::grpc::Status& s) {
    responder->Send(http::StatusResponse(middleman::FromGrpc(s)));
  };
  if (ready) {
    inference::ModelReadyRequest r;
    r.set_name(request.params[0]);
    r.set_version(version);
    return NextPool().Call<inference::ModelReadyRequest, inference::ModelReadyResponse>(
        &Async::ModelReady, std::move(r), call,
        [responder, fail, model = request.params[0]](const ::grpc::Status& s,
                                                     inference::ModelReadyResponse& answer) {
          if (!s.ok()) return fail(s);
          // Triton's model-ready semantics, as inferd's HTTP front end.
          if (!answer.ready())
            return responder->Send(http::ErrorResponse(400, "Model version not ready"));
          responder->Send(JsonResponse(ReadyJson(model)));
        });
  }
  inference::ModelMetadataRequest r;
  r.set_name(request.params[0]);
  r.set_version(version);
  NextPool().Call<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(
      &Async::ModelMetadata, std::move(r), call,
      [responder, fail](const ::grpc::Status& s, inference::ModelMetadataResponse& answer) {
        if (!s.ok()) return fail(s);
        responder->Send(JsonResponse(MetadataJson(answer)));
      });
}

void Batcher::HandleHttpInfer(const middleman::Request& request,
                              const middleman::Responder& responder) {
  const std::string model = request.params[0];
  const std::string version_text = request.params.size() > 1 ? request.params[1] : "";
  auto version = ParseModelVersion(version_text);
  if (!version.ok()) return responder->Send(http::StatusResponse(version.status()));
  auto body = Body(request.http, max_body_bytes_);
  if (!body.ok()) {
    http::HttpResponse r = http::StatusResponse(body.status());
    if (body.status().code() == StatusCode::kUnimplemented) {
      r.headers.emplace_back("Accept-Encoding", "gzip, deflate");
    }
    return responder->Send(std::move(r));
  }
  auto decoded = Decode(request.http, *body, model, *version);
  if (!decoded.ok()) return responder->Send(http::StatusResponse(decoded.status()));
  auto message = std::make_shared<const inference::ModelInferRequest>(
      ToModelInferRequest(*decoded->request, version_text));
  const std::string* accept = request.http.Header("Accept-Encoding");
  const http::Encoding compression =
      accept != nullptr ? http::ChooseEncoding(*accept) : http::Encoding::kIdentity;
  middleman::CallOptions call;
  call.cancelled = request.http.cancelled;
  call.trace = request.trace;
  Infer(
      std::move(message), call, "http",
      [this, responder, encoding = std::move(decoded->encoding), compression](
          const ::grpc::Status& s, inference::ModelInferResponse& response) {
        if (!s.ok()) return responder->Send(http::StatusResponse(middleman::FromGrpc(s)));
        // Encoding is compute work: off gRPC's threads.
        auto owned = std::make_shared<inference::ModelInferResponse>(std::move(response));
        service_.Compute([responder, owned, encoding, compression] {
          responder->Send(Encode(owned, encoding, compression));
        });
      },
      kHttpDecoupledRefusal);
}

void Batcher::RegisterHttp() {
  auto infer = [this](const middleman::Request& r, const middleman::Responder& out) {
    HandleHttpInfer(r, out);
  };
  service_.Route("POST", "/v2/models/{}/infer", infer, "/v2/models/infer");
  service_.Route("POST", "/v2/models/{}/versions/{}/infer", infer, "/v2/models/infer");
  auto metadata = [this](const middleman::Request& r, const middleman::Responder& out) {
    HandleHttpModel(r, out, false);
  };
  auto ready = [this](const middleman::Request& r, const middleman::Responder& out) {
    HandleHttpModel(r, out, true);
  };
  service_.Route("GET", "/v2/models/{}", metadata, "/v2/models");
  service_.Route("GET", "/v2/models/{}/versions/{}", metadata, "/v2/models");
  service_.Route("GET", "/v2/models/{}/ready", ready, "/v2/models/ready");
  service_.Route("GET", "/v2/models/{}/versions/{}/ready", ready, "/v2/models/ready");
  service_.Route(
      "GET", "/v2/health/live",
      [](const middleman::Request&, const middleman::Responder& out) {
        out->Send(JsonResponse(Health("live", true)));
      },
      "/v2/health/live");
  service_.Route(
      "GET", "/v2/health/ready",
      [this](const middleman::Request&, const middleman::Responder& out) {
        if (draining()) return out->Send(http::StatusResponse(Unavailable("Server exiting")));
        Ready([out](bool ready) {
          out->Send(JsonResponse(Health("ready", ready), ready ? 200 : 400));
        });
      },
      "/v2/health/ready");
}

}  // namespace inferd::batcher
