// The status page (GET /) and its JSON (GET /inferd/status);
// docs/status_page.md. Both are read-only. The page's load/unload buttons
// call the repository API, which applies its own restriction; the JSON
// serves each of its parts only under the restricted-API rule of the
// KServe endpoint that answers the same (metadata, model-repository,
// statistics, shared-memory), so the page never shows more than those
// endpoints would to the same request.
#include <optional>
#include <string>
#include <string_view>

#include "frontend/http/http_api.h"
#include "frontend/http/status_page.h"
#include "status/status_service.h"

namespace inferd::http {
namespace {

// No external assets (the page must work offline) and nothing that could
// load any: everything inline, fetches to this origin only, never framed
// (its buttons change state).
constexpr const char* kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

}  // namespace

HttpApi::~HttpApi() = default;

void HttpApi::StatusPage(const HttpRequest&, const PathParams&, const Responder& r) {
  if (!status_) return r->Send(ErrorResponse(404, "Not Found"));
  HttpResponse resp;
  resp.content_type = "text/html; charset=utf-8";
  resp.body = std::string(StatusPageHtml());
  resp.headers.emplace_back("Content-Security-Policy", kPagePolicy);
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  resp.headers.emplace_back("Cache-Control", "no-cache");
  r->Send(std::move(resp));
}

void HttpApi::StatusJson(const HttpRequest& req, const PathParams&, const Responder& r) {
  if (!status_) return r->Send(ErrorResponse(404, "Not Found"));
  auto refusal = [&](ApiGroup group) -> std::string {
    Status s = options_.restricted.Check(group, [&](std::string_view key) {
      const std::string* v = req.Header(key);
      return v ? std::optional<std::string_view>(*v) : std::nullopt;
    });
    return s.ok() ? std::string() : s.message();
  };
  status::StatusAccess access;
  access.metadata = refusal(ApiGroup::kMetadata);
  access.repository = refusal(ApiGroup::kModelRepository);
  access.statistics = refusal(ApiGroup::kStatistics);
  access.shared_memory = refusal(ApiGroup::kSharedMemory);
  // As GET /v2 lists them: the generate extension is HTTP's alone.
  std::vector<std::string> extensions = server_.Extensions();
  extensions.push_back("generate");
  HttpResponse resp;
  resp.body = status_->Json(access, extensions);
  resp.headers.emplace_back("Cache-Control", "no-store");
  r->Send(std::move(resp));
}

}  // namespace inferd::http
