#include "frontend/http/http_types.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <strings.h>

#include "core/sanitize.h"
#include "core/utf8.h"

namespace inferd::http {

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

HttpResponse ErrorResponse(int status, const std::string& message) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  // A last bound on whatever the message quotes (docs/security.md); bytes
  // that are not UTF-8 (a percent-decoded name) escaped, so the body is JSON.
  const std::string bounded = EscapeInvalidUtf8(BoundMessage(message));
  w.String(bounded.c_str(), static_cast<rapidjson::SizeType>(bounded.size()));
  w.EndObject();
  HttpResponse r;
  r.status = status;
  r.body.assign(buf.GetString(), buf.GetSize());
  return r;
}

namespace {

// Collects the parts; one response at the end.
class BufferedStream final : public HttpStream {
 public:
  BufferedStream(std::shared_ptr<HttpResponder> responder, HttpResponse head)
      : responder_(std::move(responder)), response_(std::move(head)) {}
  ~BufferedStream() override { End(); }
  void Write(std::string part) override {
    if (!ended_) response_.body += part;
  }
  void End() override {
    if (ended_) return;
    ended_ = true;
    responder_->Send(std::move(response_));
  }
  bool Closed() const override { return false; }

 private:
  std::shared_ptr<HttpResponder> responder_;
  HttpResponse response_;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<HttpStream> StartStream(const std::shared_ptr<HttpResponder>& responder,
                                        HttpResponse head) {
  HttpResponse copy = head;  // OpenStream consumes its argument
  if (auto stream = responder->OpenStream(std::move(copy))) return stream;
  return std::make_unique<BufferedStream>(responder, std::move(head));
}

HttpResponse StatusResponse(const Status& status) {
  if (status.ok()) return HttpResponse{};
  return ErrorResponse(HttpStatusFromCode(status.code()), status.message());
}

}  // namespace inferd::http
