#include "frontend/http/http_trace.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <strings.h>

#include "frontend/http/http_api.h"
#include "trace/trace_context.h"
#include "trace/trace_settings_api.h"

namespace inferd::http {
namespace {

// A POST body's members as the neutral update input: null clears, a string
// is one value, trace_level's array its values.
StatusOr<std::vector<trace::TraceSettingInput>> UpdateInput(const HttpRequest& req) {
  rapidjson::Document d;
  const std::string& body = req.body ? *req.body : std::string();
  d.Parse(body.data(), body.size());
  if (d.HasParseError() || !d.IsObject()) {
    return InvalidArgument("trace setting body must be a JSON object");
  }
  std::vector<trace::TraceSettingInput> out;
  for (const auto& m : d.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    if (m.value.IsNull()) {
      out.emplace_back(std::move(key), std::nullopt);
      continue;
    }
    std::vector<std::string> values;
    if (key == "trace_level") {
      if (!m.value.IsArray()) return InvalidArgument("'trace_level' must be an array of strings");
      for (const auto& v : m.value.GetArray()) {
        if (!v.IsString()) return InvalidArgument("'trace_level' must be an array of strings");
        values.emplace_back(v.GetString(), v.GetStringLength());
      }
    } else if (m.value.IsString()) {
      values.emplace_back(m.value.GetString(), m.value.GetStringLength());
    } else if (key == "trace_rate" || key == "trace_count" || key == "log_frequency") {
      return InvalidArgument("'" + key + "' must be a string, e.g. \"" + key + "\": \"1\"");
    } else {
      continue;  // another key: ignored (trace_file is refused below whatever its value)
    }
    out.emplace_back(std::move(key), std::move(values));
  }
  if (d.HasMember("trace_file")) out.emplace_back("trace_file", std::nullopt);
  return out;
}

std::string EncodeSettings(const std::vector<std::pair<std::string, std::vector<std::string>>>& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  for (const auto& [key, values] : s) {
    w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
    if (key == "trace_level") {
      w.StartArray();
      for (const auto& v : values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
      w.EndArray();
    } else {
      std::string joined;  // one value but for resource (key=value,key=value)
      for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
      w.String(joined.c_str(), static_cast<rapidjson::SizeType>(joined.size()));
    }
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

std::optional<trace::TraceContext> HttpTraceContext(const HttpRequest& req) {
  const std::string* parent = nullptr;
  std::string state;
  for (const auto& [name, value] : req.headers) {
    if (strcasecmp(name.c_str(), "traceparent") == 0) {
      if (parent != nullptr) return std::nullopt;  // two: invalid, start anew
      parent = &value;
    } else if (strcasecmp(name.c_str(), "tracestate") == 0) {
      if (!state.empty()) state.push_back(',');
      state += value;
    }
  }
  if (parent == nullptr) return std::nullopt;
  auto ctx = trace::ParseTraceparent(*parent);
  if (ctx && !state.empty()) ctx->trace_state = trace::ParseTraceState(state);
  return ctx;
}

std::shared_ptr<trace::RequestTrace> SampleHttpRequest(trace::Tracer& tracer,
                                                       const HttpRequest& req,
                                                       const std::string& model) {
  std::optional<trace::TraceContext> ctx;
  if (tracer.mode() == trace::TraceMode::kOpenTelemetry) ctx = HttpTraceContext(req);
  auto t = tracer.Sample(model, std::move(ctx));
  if (!t) return t;
  const auto now = std::chrono::steady_clock::now();
  t->Stamp(trace::activity::kHttpRecvStart,
           req.received == std::chrono::steady_clock::time_point{} ? now : req.received);
  t->Stamp(trace::activity::kHttpRecvEnd, now);
  return t;
}

// GET and POST /v2/trace/setting and /v2/models/{model}/trace/setting.
void HttpApi::TraceSetting(const HttpRequest& req, const PathParams& p, const Responder& r) {
  if (!p.model.empty()) {
    auto ready = server_.ModelReady(p.model, -1);
    if (!ready.ok() || !*ready) {
      return r->Send(StatusResponse(InvalidArgument("Request for unknown model : " + p.model)));
    }
  }
  trace::Tracer& tracer = server_.tracer();
  if (req.method == "POST") {
    auto input = UpdateInput(req);
    if (!input.ok()) return r->Send(StatusResponse(input.status()));
    auto update = trace::ParseTraceSettingUpdate(*input);
    if (!update.ok()) return r->Send(StatusResponse(update.status()));
    if (Status s = tracer.Update(p.model, *update); !s.ok()) return r->Send(StatusResponse(s));
  }
  HttpResponse resp;
  resp.body = EncodeSettings(trace::TraceSettingResponse(tracer.Get(p.model), tracer.config()));
  r->Send(std::move(resp));
}

}  // namespace inferd::http
