#include "frontend/http/http_api.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <thread>

#include "core/sanitize.h"
#include "frontend/http/compression.h"
#include "frontend/http/http_infer_sink.h"
#include "frontend/http/infer_codec.h"
#include "repository/repository_scan.h"

namespace inferd::http {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

HttpResponse JsonResponse(int status, const rapidjson::StringBuffer& buf) {
  HttpResponse r;
  r.status = status;
  r.body.assign(buf.GetString(), buf.GetSize());
  return r;
}

HttpResponse FromStatus(const Status& s) {
  return ErrorResponse(HttpStatusFromCode(s.code()), s.message());
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '/') {
      ++pos;
      continue;
    }
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    out.emplace_back(path.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::optional<int64_t> ParseVersion(const std::string& s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || s.empty()) return std::nullopt;
  return v;
}

void WriteTensorMetadata(Writer& w, const std::vector<TensorMetadata>& tensors) {
  w.StartArray();
  for (const auto& t : tensors) {
    w.StartObject();
    w.Key("name");
    w.String(t.name.c_str());
    w.Key("datatype");
    w.String(DataTypeToProtocol(t.datatype).data());
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
}

void WriteDuration(Writer& w, const char* key, const DurationStat& d) {
  w.Key(key);
  w.StartObject();
  w.Key("count");
  w.Uint64(d.count);
  w.Key("ns");
  w.Uint64(d.ns);
  w.EndObject();
}

HttpResponse StatisticsResponse(const std::vector<ModelStatistics>& all) {
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("model_stats");
  w.StartArray();
  for (const auto& m : all) {
    const ModelStatsSnapshot& s = m.stats;
    w.StartObject();
    w.Key("name");
    w.String(m.name.c_str());
    w.Key("version");
    w.String(std::to_string(m.version).c_str());
    w.Key("last_inference");
    w.Uint64(s.last_inference_ms);
    w.Key("inference_count");
    w.Uint64(s.inference_count);
    w.Key("execution_count");
    w.Uint64(s.execution_count);
    w.Key("inference_stats");
    w.StartObject();
    WriteDuration(w, "success", s.success);
    WriteDuration(w, "fail", s.fail);
    WriteDuration(w, "queue", s.queue);
    WriteDuration(w, "compute_input", s.compute_input);
    WriteDuration(w, "compute_infer", s.compute_infer);
    WriteDuration(w, "compute_output", s.compute_output);
    WriteDuration(w, "cache_hit", DurationStat{});
    WriteDuration(w, "cache_miss", DurationStat{});
    w.EndObject();
    w.Key("response_stats");
    w.StartObject();
    w.EndObject();
    w.Key("batch_stats");
    w.StartArray();
    for (const auto& [size, b] : s.batch_stats) {
      w.StartObject();
      w.Key("batch_size");
      w.Uint64(size);
      WriteDuration(w, "compute_input", b.compute_input);
      WriteDuration(w, "compute_infer", b.compute_infer);
      WriteDuration(w, "compute_output", b.compute_output);
      w.EndObject();
    }
    w.EndArray();
    w.Key("memory_usage");
    w.StartArray();
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return JsonResponse(200, buf);
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int v = 0;
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || p != s.data() + i + 3) return std::nullopt;
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

HttpApi::HttpApi(InferenceServer& server, HttpApiOptions options)
    : server_(server), options_(options) {}

void HttpApi::Handle(HttpRequest req, std::shared_ptr<HttpResponder> responder) {
  const auto segs = SplitPath(req.path);
  auto send = [&](HttpResponse r) { responder->Send(std::move(r)); };
  auto method_is = [&](const char* m) {
    if (req.method == m) return true;
    send(ErrorResponse(405, "Method Not Allowed"));
    return false;
  };
  if (segs.empty() || segs[0] != "v2") return send(ErrorResponse(404, "Not Found"));
  if (auto group = HttpApiGroup(req.path)) {  // --http-restricted-api
    Status allowed = options_.restricted.Check(*group, [&](std::string_view key) {
      const std::string* v = req.Header(key);
      return v ? std::optional<std::string_view>(*v) : std::nullopt;
    });
    if (!allowed.ok()) return send(FromStatus(allowed));
  }

  if (segs.size() == 1) {  // server metadata
    if (!method_is("GET")) return;
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.StartObject();
    w.Key("name");
    w.String(server_.id().c_str());
    w.Key("version");
    w.String(InferenceServer::Version());
    w.Key("extensions");
    w.StartArray();
    for (const auto& e : server_.Extensions()) w.String(e.c_str());
    w.EndArray();
    w.EndObject();
    return send(JsonResponse(200, buf));
  }
  if (segs[1] == "health" && segs.size() == 3 && (segs[2] == "live" || segs[2] == "ready")) {
    if (!method_is("GET")) return;
    const bool live = segs[2] == "live";
    if (!live && server_.IsShuttingDown()) return send(ErrorResponse(503, "Server exiting"));
    const bool ok = live ? server_.IsLive() : server_.IsReady();
    HttpResponse r;
    r.status = ok ? 200 : 400;
    r.body = std::string("{\"") + (live ? "live" : "ready") + "\":" + (ok ? "true" : "false") + "}";
    return send(std::move(r));
  }
  if (segs[1] == "models" && segs.size() == 3 && segs[2] == "stats") {
    if (!method_is("GET")) return;
    auto stats = server_.GetStatistics("", -1);
    if (!stats.ok()) return send(FromStatus(stats.status()));
    return send(StatisticsResponse(*stats));
  }
  if (segs[1] == "models" && segs.size() >= 3) {
    auto name = PercentDecode(segs[2]);
    if (!name || !IsValidModelName(*name)) {
      return send(ErrorResponse(400, "invalid model name in the request path"));
    }
    size_t i = 3;
    int64_t version = -1;
    if (segs.size() > i + 1 && segs[i] == "versions") {
      auto v = ParseVersion(segs[i + 1]);
      if (!v) return send(ErrorResponse(400, "model version must be a non-negative integer"));
      version = *v;
      i += 2;
    }
    std::string action;
    if (segs.size() == i + 1)
      action = segs[i];
    else if (segs.size() > i + 1)
      return send(ErrorResponse(404, "Not Found"));
    return HandleModel(req, *name, version, action, std::move(responder));
  }
  if (segs[1] == "repository") return HandleRepository(req, segs, std::move(responder));
  if (segs[1] == "systemsharedmemory" || segs[1] == "cudasharedmemory") {
    return send(HandleSharedMemory(req, segs));
  }
  send(ErrorResponse(404, "Not Found"));
}

void HttpApi::HandleModel(const HttpRequest& req, const std::string& model, int64_t version,
                          const std::string& action, std::shared_ptr<HttpResponder> responder) {
  auto send = [&](HttpResponse r) { responder->Send(std::move(r)); };
  const char* want = action == "infer" ? "POST" : "GET";
  if (action != "" && action != "ready" && action != "config" && action != "infer" &&
      action != "stats") {
    return send(ErrorResponse(404, "Not Found"));
  }
  if (req.method != want) return send(ErrorResponse(405, "Method Not Allowed"));
  if (action == "stats") {
    auto stats = server_.GetStatistics(model, version);
    if (!stats.ok()) return send(FromStatus(stats.status()));
    return send(StatisticsResponse(*stats));
  }
  if (action == "infer") return HandleInfer(req, model, version, std::move(responder));
  if (action == "ready") {
    auto ready = server_.ModelReady(model, version);
    if (!ready.ok()) return send(FromStatus(ready.status()));
    if (!*ready) return send(ErrorResponse(400, "Model version not ready"));
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.StartObject();
    w.Key("name");
    w.String(model.c_str());
    w.Key("ready");
    w.Bool(true);
    w.EndObject();
    return send(JsonResponse(200, buf));
  }
  if (action == "config") {
    auto json = server_.GetModelConfigJson(model, version);
    if (!json.ok()) return send(FromStatus(json.status()));
    HttpResponse r;
    r.body = std::move(*json);
    return send(std::move(r));
  }
  auto md = server_.GetModelMetadata(model, version);
  if (!md.ok()) return send(FromStatus(md.status()));
  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  w.Key("name");
  w.String(md->name.c_str());
  w.Key("versions");
  w.StartArray();
  for (const auto& v : md->versions) w.String(v.c_str());
  w.EndArray();
  w.Key("platform");
  w.String(md->platform.c_str());
  w.Key("inputs");
  WriteTensorMetadata(w, md->inputs);
  w.Key("outputs");
  WriteTensorMetadata(w, md->outputs);
  w.EndObject();
  send(JsonResponse(200, buf));
}

void HttpApi::HandleInfer(const HttpRequest& req, const std::string& model, int64_t version,
                          std::shared_ptr<HttpResponder> responder) {
  auto fail = [&](const Status& s) { responder->Send(FromStatus(s)); };
  // An unknown model is reported as such, whatever the body holds.
  if (Status m = server_.CheckModel(model, version); !m.ok()) return fail(m);
  std::shared_ptr<std::string> body = req.body;
  if (const std::string* ce = req.Header("Content-Encoding");
      ce && !ce->empty() && *ce != "identity") {
    if (*ce != "gzip" && *ce != "deflate") {
      HttpResponse r = ErrorResponse(501, "Unsupported compression type '" + Bounded(*ce) + "'");
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
  const std::string* accept = req.Header("Accept-Encoding");
  const Encoding encoding = accept ? ChooseEncoding(*accept) : Encoding::kIdentity;
  server_.Infer(std::move(decoded->request),
                std::make_unique<HttpInferSink>(std::move(responder), std::move(decoded->encoding),
                                                encoding));
}

void HttpApi::HandleRepository(const HttpRequest& req, const std::vector<std::string>& segs,
                               std::shared_ptr<HttpResponder> responder) {
  auto send = [&](HttpResponse r) { responder->Send(std::move(r)); };
  // /v2/repository[/{repo}]/index  or  /v2/repository[/{repo}]/models/{m}/(load|unload)
  size_t i = 2;
  bool named_repo = false;
  if (segs.size() > i && segs[i] != "index" && segs[i] != "models") {
    named_repo = true;
    ++i;
  }
  if (segs.size() == i + 1 && segs[i] == "index") {
    if (req.method != "POST") return send(ErrorResponse(405, "Method Not Allowed"));
    bool ready_only = false;
    if (req.body && !req.body->empty()) {
      rapidjson::Document d;
      d.Parse(req.body->data(), req.body->size());
      if (d.HasParseError() || !d.IsObject()) {
        return send(ErrorResponse(400, "repository index body must be a JSON object"));
      }
      if (d.HasMember("ready")) {
        if (!d["ready"].IsBool()) {
          return send(ErrorResponse(400, "Invalid value for 'ready': expected a boolean"));
        }
        ready_only = d["ready"].GetBool();
      }
    }
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.StartArray();
    for (const auto& e : server_.RepositoryIndex(ready_only)) {
      w.StartObject();
      w.Key("name");
      w.String(e.name.c_str());
      if (e.version) {
        w.Key("version");
        w.String(std::to_string(*e.version).c_str());
      }
      if (e.state != ModelState::kUnknown) {
        w.Key("state");
        w.String(ModelStateName(e.state).data());
      }
      if (!e.reason.empty()) {
        w.Key("reason");
        w.String(e.reason.c_str());
      }
      w.EndObject();
    }
    w.EndArray();
    return send(JsonResponse(200, buf));
  }
  if (segs.size() == i + 3 && segs[i] == "models" &&
      (segs[i + 2] == "load" || segs[i + 2] == "unload")) {
    if (req.method != "POST") return send(ErrorResponse(405, "Method Not Allowed"));
    if (named_repo)
      return send(ErrorResponse(501, "'repository_name' specification is not supported"));
    auto name = PercentDecode(segs[i + 1]);
    if (!name || !IsValidModelName(*name)) {
      return send(ErrorResponse(400, "invalid model name in the request path"));
    }
    const bool load = segs[i + 2] == "load";
    std::optional<std::string> config;
    if (req.body && !req.body->empty()) {
      rapidjson::Document d;
      d.Parse(req.body->data(), req.body->size());
      if (d.HasParseError() || !d.IsObject()) {
        return send(ErrorResponse(400, "request body must be a JSON object"));
      }
      if (d.HasMember("parameters")) {
        const auto& p = d["parameters"];
        if (!p.IsObject()) return send(ErrorResponse(400, "'parameters' must be an object"));
        for (const auto& m : p.GetObject()) {
          const std::string key = m.name.GetString();
          if (load && key == "config") {
            if (!m.value.IsString()) {
              return send(ErrorResponse(400, "load parameter 'config' must be a JSON string"));
            }
            config = std::string(m.value.GetString(), m.value.GetStringLength());
          } else if (!load && key == "unload_dependents") {
            if (!m.value.IsBool()) {
              return send(ErrorResponse(400, "'unload_dependents' must be a boolean"));
            }
          } else {
            return send(ErrorResponse(400, "unrecognized " + std::string(load ? "load" : "unload") +
                                               " parameter '" + Bounded(key) + "'"));
          }
        }
      }
    }
    // Loading can take long: never on an I/O thread.
    std::thread([this, load, name = *name, config, responder] {
      Status s = load ? server_.LoadModel(name, config) : server_.UnloadModel(name);
      if (!s.ok()) return responder->Send(FromStatus(s));
      HttpResponse r;
      responder->Send(std::move(r));
    }).detach();
    return;
  }
  send(ErrorResponse(404, "Not Found"));
}

HttpResponse HttpApi::HandleSharedMemory(const HttpRequest& req,
                                         const std::vector<std::string>& segs) {
  // /v2/<kind>[/region/{r}]/(status|register|unregister)
  const bool cuda = segs[1] == "cudasharedmemory";
  std::optional<std::string> region;
  size_t i = 2;
  if (segs.size() > i + 1 && segs[i] == "region") {
    region = PercentDecode(segs[i + 1]);
    if (!region || region->empty()) return ErrorResponse(400, "invalid region name in the path");
    i += 2;
  }
  if (segs.size() != i + 1) return ErrorResponse(404, "Not Found");
  const std::string& action = segs[i];
  const std::string name = region.value_or("");
  const char* kind = cuda ? "CUDA" : "system";
  if (action == "status") {
    if (req.method != "GET") return ErrorResponse(405, "Method Not Allowed");
    rapidjson::StringBuffer buf;
    Writer w(buf);
    w.StartArray();
    if (cuda) {
      auto status = server_.cuda_shared_memory().GetStatus(name);
      if (!status.ok()) return FromStatus(status.status());
      for (const auto& r : *status) {
        w.StartObject();
        w.Key("name");
        w.String(r.name.c_str());
        w.Key("device_id");
        w.Int64(r.device_id);
        w.Key("byte_size");
        w.Uint64(r.byte_size);
        w.EndObject();
      }
    } else {
      auto status = server_.shared_memory().GetStatus(name);
      if (!status.ok()) return FromStatus(status.status());
      for (const auto& r : *status) {
        w.StartObject();
        w.Key("name");
        w.String(r.name.c_str());
        w.Key("key");
        w.String(r.key.c_str());
        w.Key("offset");
        w.Uint64(r.offset);
        w.Key("byte_size");
        w.Uint64(r.byte_size);
        w.EndObject();
      }
    }
    w.EndArray();
    return JsonResponse(200, buf);
  }
  if (action != "register" && action != "unregister") return ErrorResponse(404, "Not Found");
  if (req.method != "POST") return ErrorResponse(405, "Method Not Allowed");
  if (!server_.allow_client_shm()) {
    return ErrorResponse(501,
                         "Client shared memory is disabled. Start the server with "
                         "'--allow-client-shm=true' to enable.");
  }
  if (action == "unregister") {
    Status s = cuda ? server_.cuda_shared_memory().Unregister(name)
                    : server_.shared_memory().Unregister(name);
    return s.ok() ? HttpResponse{} : FromStatus(s);
  }
  if (name.empty()) {
    return ErrorResponse(400, std::string("'region name' is necessary to register ") + kind +
                                  " shared memory region");
  }
  rapidjson::Document d;
  d.Parse(req.body ? req.body->c_str() : "", req.body ? req.body->size() : 0);
  if (cuda) return RegisterCudaSharedMemory(name, d);
  if (d.HasParseError() || !d.IsObject()) {
    return ErrorResponse(400, "register body must be a JSON object with 'key' and 'byte_size'");
  }
  if (!d.HasMember("key") || !d["key"].IsString()) {
    return ErrorResponse(400, "register needs a 'key' string (the shared memory object name)");
  }
  if (!d.HasMember("byte_size") || !d["byte_size"].IsUint64()) {
    return ErrorResponse(400, "register needs 'byte_size', a non-negative integer");
  }
  uint64_t offset = 0;
  if (d.HasMember("offset")) {
    if (!d["offset"].IsUint64()) {
      return ErrorResponse(400, "'offset' must be a non-negative integer");
    }
    offset = d["offset"].GetUint64();
  }
  Status s = server_.shared_memory().Register(name, d["key"].GetString(), offset,
                                              d["byte_size"].GetUint64());
  return s.ok() ? HttpResponse{} : FromStatus(s);
}

}  // namespace inferd::http
