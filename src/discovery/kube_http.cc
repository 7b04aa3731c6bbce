#include "discovery/kube_http.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "objectstore/curl_library.h"

namespace inferd::discovery {
namespace {

using s3::Curl;
using s3::CurlApi;

constexpr size_t kMaxErrorBody = 4096;

struct Call {
  const CurlApi* api;
  CURL* curl;
  const ChunkSink* sink;
  KubeResponse* out;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* call = static_cast<Call*>(user);
  size_t bytes = size * n;
  long status = 0;
  call->api->easy_getinfo(call->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    std::string& body = call->out->error_body;
    body.append(data, std::min(bytes, kMaxErrorBody - std::min(kMaxErrorBody, body.size())));
    return bytes;
  }
  Status s = (*call->sink)(std::string_view(data, bytes));
  if (!s.ok()) {
    call->out->sink_status = std::move(s);
    return 0;  // CURLE_WRITE_ERROR
  }
  return bytes;
}

curl_socket_t OnOpenSocket(void* user, curlsocktype, curl_sockaddr* address) {
  auto* client = static_cast<KubeHttpClient*>(user);
  int fd = client->OpenSocket(address->family, address->socktype, address->protocol);
  return fd < 0 ? CURL_SOCKET_BAD : fd;
}

int OnCloseSocket(void* user, curl_socket_t fd) {
  return static_cast<KubeHttpClient*>(user)->CloseSocket(fd);
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<KubeHttpClient*>(user)->cancelled() ? 1 : 0;
}

}  // namespace

std::string KubeResponse::Describe() const {
  if (cancelled) return "cancelled";
  if (!sink_status.ok()) return sink_status.message();
  if (curl_code != 0) return curl_error;
  if (http_status < 200 || http_status >= 300) {
    std::string s = "HTTP " + std::to_string(http_status);
    if (!error_body.empty()) s += ": " + error_body.substr(0, 512);
    return s;
  }
  return "";
}

int KubeHttpClient::OpenSocket(int family, int type, int protocol) {
  MutexLock lock(mu_);
  if (cancelled_) return -1;
  int fd = ::socket(family, type | SOCK_CLOEXEC, protocol);
  if (fd >= 0) sockets_.insert(fd);
  return fd;
}

int KubeHttpClient::CloseSocket(int fd) {
  MutexLock lock(mu_);  // Cancel never shuts down a closed (maybe reused) fd
  sockets_.erase(fd);
  return ::close(fd);
}

bool KubeHttpClient::cancelled() {
  MutexLock lock(mu_);
  return cancelled_;
}

void KubeHttpClient::Cancel() {
  MutexLock lock(mu_);
  cancelled_ = true;
  for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
}

void KubeHttpClient::Reset() {
  MutexLock lock(mu_);
  cancelled_ = false;
}

KubeResponse KubeHttpClient::Get(const KubeGet& get, const ChunkSink& sink) {
  KubeResponse out;
  const CurlApi* api = Curl();
  if (api == nullptr) {
    out.curl_code = CURLE_FAILED_INIT;
    out.curl_error = s3::CurlLoadError();
    return out;
  }
  if (cancelled()) {
    out.cancelled = true;
    return out;
  }
  CURL* curl = api->easy_init();
  if (curl == nullptr) {
    out.curl_code = CURLE_FAILED_INIT;
    out.curl_error = "curl_easy_init failed";
    return out;
  }
  curl_slist* headers = api->slist_append(nullptr, "Accept: application/json");
  std::string authorization;
  if (!get.bearer_token.empty()) {
    authorization = "Authorization: Bearer " + get.bearer_token;
    headers = api->slist_append(headers, authorization.c_str());
  }
  char error_buffer[CURL_ERROR_SIZE] = {0};
  Call call{api, curl, &sink, &out};
  api->easy_setopt(curl, CURLOPT_URL, get.url.c_str());
  api->easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  api->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  api->easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  api->easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  api->easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!get.ca_file.empty()) api->easy_setopt(curl, CURLOPT_CAINFO, get.ca_file.c_str());
  api->easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  api->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, get.connect_timeout_ms);
  api->easy_setopt(curl, CURLOPT_TIMEOUT_MS, get.total_timeout_ms);
  api->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, get.low_speed_bytes_per_s);
  api->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, get.low_speed_window_s);
  api->easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  api->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  api->easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  api->easy_setopt(curl, CURLOPT_WRITEDATA, &call);
  api->easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
  api->easy_setopt(curl, CURLOPT_OPENSOCKETDATA, this);
  api->easy_setopt(curl, CURLOPT_CLOSESOCKETFUNCTION, OnCloseSocket);
  api->easy_setopt(curl, CURLOPT_CLOSESOCKETDATA, this);
  api->easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  api->easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  api->easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  api->easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);

  CURLcode rc = api->easy_perform(curl);
  out.curl_code = rc;
  api->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.http_status);
  if (rc != CURLE_OK) {
    out.curl_error = error_buffer[0] != '\0' ? error_buffer : api->easy_strerror(rc);
  }
  api->easy_cleanup(curl);
  api->slist_free_all(headers);
  out.cancelled = cancelled();
  return out;
}

}  // namespace inferd::discovery
