// The logging extension over HTTP (PROTOCOL.md §1.13, docs/logging.md):
// GET /v2/logging answers the settings; POST takes a JSON object with any of
// the keys of core/log_control.h, applies them together and answers the
// settings. Restricted API group "logging" (checked in HttpApi::Handle).
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/log_control.h"
#include "core/utf8.h"
#include "frontend/http/http_api.h"
#include "frontend/http/infer_codec.h"

namespace inferd::http {
namespace {

// A member's value in the neutral kinds: JSON null, true/false, a
// non-negative integer, a string; anything else is of the wrong kind.
LogSettingValue SettingValue(const rapidjson::Value& v) {
  if (v.IsNull()) return std::monostate{};
  if (v.IsBool()) return v.GetBool();
  if (v.IsUint64()) return v.GetUint64();
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  return LogSettingWrongKind{};
}

Status ApplyBody(const std::string* body) {
  LogSettingsChange change;
  if (body == nullptr || body->empty()) return change.Apply();  // nothing to change
  // The settings are one flat object; anything deeper is refused before
  // parsing (rapidjson recurses).
  if (JsonNestingDepth(body->data(), body->size(), 2) > 2) {
    return InvalidArgument("the logging body must be a JSON object of settings");
  }
  rapidjson::Document d;
  d.Parse(body->data(), body->size());
  if (d.HasParseError() || !d.IsObject()) {
    return InvalidArgument("the logging body must be a JSON object of settings");
  }
  for (const auto& m : d.GetObject()) {
    INFERD_RETURN_IF_ERROR(change.Set(
        std::string_view(m.name.GetString(), m.name.GetStringLength()), SettingValue(m.value)));
  }
  return change.Apply();
}

std::string EncodeSettings(const LogSettings& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("log_file");
  const std::string file = EscapeInvalidUtf8(s.file);  // a path: bytes
  w.String(file.data(), static_cast<rapidjson::SizeType>(file.size()));
  w.Key("log_info");
  w.Bool(s.info);
  w.Key("log_warning");
  w.Bool(s.warning);
  w.Key("log_error");
  w.Bool(s.error);
  w.Key("log_verbose_level");
  w.Uint(static_cast<unsigned>(s.verbose));
  w.Key("log_format");
  const std::string_view format = LogFormatName(s.format);
  w.String(format.data(), static_cast<rapidjson::SizeType>(format.size()));
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace

void HttpApi::Logging(const HttpRequest& req, const PathParams&, const Responder& r) {
  if (req.method == "POST") {
    if (Status s = ApplyBody(req.body.get()); !s.ok()) return r->Send(StatusResponse(s));
  }
  HttpResponse resp;
  resp.body = EncodeSettings(GetLogSettings());
  r->Send(std::move(resp));
}

}  // namespace inferd::http
