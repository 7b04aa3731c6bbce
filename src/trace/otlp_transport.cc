#include "trace/otlp_transport.h"

#include <cctype>
#include <ctime>
#include <string_view>

#include "objectstore/curl_library.h"

namespace inferd::trace {
namespace {

using s3::Curl;
using s3::CurlApi;

constexpr size_t kMaxResponseBody = size_t{4} << 20;  // the spec's recommended limit

struct Call {
  PostResult* out;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<Call*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.substr(0, 5) == "HTTP/") {
    call->out->retry_after.reset();  // a new response (after a 100 Continue)
  } else if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    }
    if (match) {
      call->out->retry_after =
          ParseRetryAfter(line.substr(kName.size()), std::chrono::system_clock::now());
    }
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<Call*>(user);
  std::string& body = call->out->body;
  size_t bytes = size * n;
  body.append(data, std::min(bytes, kMaxResponseBody - std::min(kMaxResponseBody, body.size())));
  return bytes;
}

class CurlTransport : public OtlpTransport {
 public:
  CurlTransport(std::string url, std::vector<std::string> headers)
      : url_(std::move(url)), headers_(std::move(headers)) {}

  ~CurlTransport() override {
    if (curl_ != nullptr) Curl()->easy_cleanup(curl_);
    if (header_list_ != nullptr) Curl()->slist_free_all(header_list_);
  }

  PostResult Post(const std::string& body, std::chrono::milliseconds timeout) override {
    PostResult out;
    const CurlApi* api = Curl();
    if (api == nullptr) {
      out.error = s3::CurlLoadError();
      return out;
    }
    if (curl_ == nullptr) {
      curl_ = api->easy_init();
      if (curl_ == nullptr) {
        out.error = "curl_easy_init failed";
        return out;
      }
      header_list_ = api->slist_append(header_list_, "Content-Type: application/x-protobuf");
      header_list_ = api->slist_append(header_list_, "Expect:");  // no 100-continue round trip
      for (const std::string& h : headers_)
        header_list_ = api->slist_append(header_list_, h.c_str());
    }
    // Reset keeps the handle's connection cache: the keep-alive connection
    // of the last export is reused.
    api->easy_reset(curl_);
    char error_buffer[CURL_ERROR_SIZE] = {0};
    Call call{&out};
    long timeout_ms = std::max<long>(1, static_cast<long>(timeout.count()));
    api->easy_setopt(curl_, CURLOPT_URL, url_.c_str());
    api->easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
    api->easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(curl_, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    api->easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L);
    api->easy_setopt(curl_, CURLOPT_TCP_KEEPALIVE, 1L);
    api->easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 5000L));
    api->easy_setopt(curl_, CURLOPT_TIMEOUT_MS, timeout_ms);
    api->easy_setopt(curl_, CURLOPT_POST, 1L);
    api->easy_setopt(curl_, CURLOPT_POSTFIELDS, body.data());
    api->easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    api->easy_setopt(curl_, CURLOPT_HTTPHEADER, header_list_);
    api->easy_setopt(curl_, CURLOPT_HEADERFUNCTION, OnHeader);
    api->easy_setopt(curl_, CURLOPT_HEADERDATA, &call);
    api->easy_setopt(curl_, CURLOPT_WRITEFUNCTION, OnBody);
    api->easy_setopt(curl_, CURLOPT_WRITEDATA, &call);
    api->easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_buffer);
    CURLcode rc = api->easy_perform(curl_);
    if (rc != CURLE_OK) {
      out.http_status = 0;
      out.error = error_buffer[0] != '\0' ? error_buffer : api->easy_strerror(rc);
      return out;
    }
    api->easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &out.http_status);
    return out;
  }

 private:
  const std::string url_;
  const std::vector<std::string> headers_;
  CURL* curl_ = nullptr;
  curl_slist* header_list_ = nullptr;
};

}  // namespace

std::unique_ptr<OtlpTransport> NewCurlTransport(std::string url, std::vector<std::string> headers) {
  return std::make_unique<CurlTransport>(std::move(url), std::move(headers));
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(
    std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) {
    value.remove_suffix(1);
  }
  if (value.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    int64_t seconds = 0;
    for (char c : value) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      seconds = std::min<int64_t>(seconds * 10 + (c - '0'), 86400);  // a day is plenty
    }
    return std::chrono::seconds(seconds);
  }
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  std::string text(value);
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  auto at = std::chrono::system_clock::from_time_t(::timegm(&tm));
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(at - now);
}

}  // namespace inferd::trace
