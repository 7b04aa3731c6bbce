#include "objectstore/http_transfer.h"

#include <algorithm>
#include <cctype>

#include "core/thread_annotations.h"
#include "objectstore/curl_library.h"

namespace inferd::s3 {
namespace {

constexpr size_t kMaxIdleHandles = 16;
constexpr size_t kMaxErrorBody = size_t{64} * 1024;

// libcurl's functions; only called once Perform found the library loaded
// (a HandlePool holds handles only from a loaded library).
const CurlApi& Api() { return *Curl(); }

bool HeaderIs(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

std::string HeaderValue(std::string_view line, size_t name_size) {
  std::string_view v = line.substr(name_size + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
    v.remove_suffix(1);
  }
  return std::string(v);
}

struct Call {
  CURL* curl;
  const BodySink* sink;
  HttpOutcome* out;
  bool headers_seen = false;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<Call*>(user);
  std::string_view line(data, size * n);
  call->headers_seen = true;
  if (line.substr(0, 5) == "HTTP/") {
    // A new response (after a 100 Continue, say): forget the last one's.
    call->out->etag.clear();
    call->out->bucket_region.clear();
    call->out->etag_not_md5 = false;
  } else if (HeaderIs(line, "etag")) {
    call->out->etag = HeaderValue(line, 4);
  } else if (HeaderIs(line, "x-amz-bucket-region")) {
    call->out->bucket_region = HeaderValue(line, 19);
  } else if (HeaderIs(line, "x-amz-server-side-encryption")) {
    if (HeaderValue(line, 28).rfind("aws:kms", 0) == 0) call->out->etag_not_md5 = true;
  } else if (HeaderIs(line, "x-amz-server-side-encryption-customer-algorithm")) {
    call->out->etag_not_md5 = true;
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<Call*>(user);
  size_t bytes = size * n;
  long status = 0;
  Api().easy_getinfo(call->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    // An error document: kept for its Code and Message, the rest dropped.
    std::string& body = call->out->error_body;
    body.append(data, std::min(bytes, kMaxErrorBody - std::min(kMaxErrorBody, body.size())));
    return bytes;
  }
  Status s = (*call->sink)(data, bytes);
  if (!s.ok()) {
    call->out->sink_status = std::move(s);
    return 0;  // CURLE_WRITE_ERROR
  }
  call->out->body_bytes += bytes;
  return bytes;
}

void SetOptions(CURL* curl, const HttpRequest& request, const TransferOptions& options,
                curl_slist* headers, Call* call, char* error_buffer) {
  Api().easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  // Keys may hold "." and ".." segments: sent as they are (they are part of
  // what was signed), never normalised away by curl.
  Api().easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
  Api().easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  Api().easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded server
  Api().easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  Api().easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect is an error to explain
  Api().easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  Api().easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  Api().easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  Api().easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options.connect_timeout_ms);
  Api().easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes_per_s);
  Api().easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.low_speed_window_s);
  Api().easy_setopt(curl, CURLOPT_TIMEOUT_MS, options.total_timeout_ms);
  // Streamed downloads (no total timeout) receive in 512 KiB chunks instead
  // of curl's 16 KiB: a 100 MB model file is 200 write(2)s and MD5 updates
  // instead of 6,400. Small requests keep the default.
  Api().easy_setopt(curl, CURLOPT_BUFFERSIZE,
                    options.total_timeout_ms == 0 ? 512L * 1024 : 16L * 1024);
  if (request.method == "HEAD") {
    Api().easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    Api().easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  Api().easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  Api().easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  Api().easy_setopt(curl, CURLOPT_HEADERDATA, call);
  Api().easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  Api().easy_setopt(curl, CURLOPT_WRITEDATA, call);
  Api().easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
}

}  // namespace

struct HandlePool::State {
  Mutex mu;
  std::vector<CURL*> idle INFERD_GUARDED_BY(mu);

  CURL* Acquire() {
    {
      MutexLock lock(mu);
      if (!idle.empty()) {
        CURL* c = idle.back();  // the most recent: its connection is the likeliest alive
        idle.pop_back();
        return c;
      }
    }
    return Api().easy_init();
  }

  void Release(CURL* c) {
    // Reset drops the options but keeps the handle's connection cache.
    Api().easy_reset(c);
    {
      MutexLock lock(mu);
      if (idle.size() < kMaxIdleHandles) {
        idle.push_back(c);
        return;
      }
    }
    Api().easy_cleanup(c);
  }
};

HandlePool::HandlePool() : state_(std::make_unique<State>()) {}

HandlePool::~HandlePool() {
  MutexLock lock(state_->mu);
  for (CURL* c : state_->idle) Api().easy_cleanup(c);
}

HttpOutcome HandlePool::Perform(const HttpRequest& request, const TransferOptions& options,
                                const BodySink& sink) {
  HttpOutcome out;
  if (Curl() == nullptr) {
    out.curl_code = CURLE_FAILED_INIT;
    out.curl_error = CurlLoadError();
    return out;
  }
  CURL* curl = state_->Acquire();
  if (curl == nullptr) {
    out.curl_code = CURLE_FAILED_INIT;
    out.curl_error = "curl_easy_init failed";
    return out;
  }
  curl_slist* headers = nullptr;
  for (const std::string& h : request.headers) headers = Api().slist_append(headers, h.c_str());
  // No "Expect: 100-continue" (no bodies are sent anyway) and no
  // Accept-Encoding: the body's bytes must be the object's, for its MD5.
  headers = Api().slist_append(headers, "Expect:");

  for (int attempt = 0;; ++attempt) {
    out = HttpOutcome();
    char error_buffer[CURL_ERROR_SIZE] = {0};
    Call call{curl, &sink, &out};
    SetOptions(curl, request, options, headers, &call, error_buffer);
    if (attempt > 0) Api().easy_setopt(curl, CURLOPT_FRESH_CONNECT, 1L);
    CURLcode rc = Api().easy_perform(curl);
    out.curl_code = rc;
    Api().easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
    curl_off_t length = -1;
    Api().easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    out.content_length = length;
    // Pre-transfer time is set once the request could be sent, on a new
    // connection or a reused one (whose connect time is 0).
    curl_off_t connect_us = 0;
    curl_off_t pretransfer_us = 0;
    Api().easy_getinfo(curl, CURLINFO_CONNECT_TIME_T, &connect_us);
    Api().easy_getinfo(curl, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
    out.connected = connect_us > 0 || pretransfer_us > 0;
    long new_connections = 0;
    Api().easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &new_connections);
    if (rc != CURLE_OK) {
      out.curl_error = error_buffer[0] != '\0' ? error_buffer : Api().easy_strerror(rc);
    }
    bool stale_connection =
        (rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR) &&
        !call.headers_seen && new_connections == 0;
    if (!(stale_connection && attempt == 0)) break;
  }
  Api().slist_free_all(headers);
  state_->Release(curl);
  return out;
}

}  // namespace inferd::s3
