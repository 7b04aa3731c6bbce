// KubeHttpClient: GET requests to the Kubernetes API server over libcurl
// (dlopen'ed: objectstore/curl_library.h), the body streamed to a sink as it
// arrives (a watch never ends by itself), cancellable from another thread.
// Knows nothing of Kubernetes beyond the Bearer token.
//
// Ownership: the client owns nothing between calls (a fresh curl handle
// per Get: a watch reconnects seldom).
// Threading: Get runs on one thread at a time; Cancel and Reset from any
// thread. Cancel shuts down the sockets of the Get in progress, so it
// returns at once, and makes every later Get return `cancelled` until Reset.
// Blocking: Get blocks for the whole response, bounded by the timeouts.
// Errors: in KubeResponse (never thrown): curl's code and message, the HTTP
// status, the sink's status when it stopped the transfer.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/thread_annotations.h"

namespace inferd::discovery {

struct KubeGet {
  std::string url;           // https://host:port/path?query, already encoded
  std::string bearer_token;  // "" : no Authorization header
  std::string ca_file;       // "" : curl's default CA bundle
  long connect_timeout_ms = 5000;
  long total_timeout_ms = 0;       // 0: none
  long low_speed_bytes_per_s = 0;  // with low_speed_window_s: 0 is off
  long low_speed_window_s = 0;
};

struct KubeResponse {
  int curl_code = 0;  // CURLcode; 0: the response ended normally
  std::string curl_error;
  long http_status = 0;  // 0: no response
  bool cancelled = false;
  Status sink_status;      // the sink's error that stopped the transfer
  std::string error_body;  // a non-2xx body, first 4 KiB
  // A one-line description of a failure for logs (empty on success).
  std::string Describe() const;
};

// Called with each chunk of a 2xx body; a non-OK status aborts the transfer.
using ChunkSink = std::function<Status(std::string_view chunk)>;

class KubeHttpClient {
 public:
  KubeResponse Get(const KubeGet& get, const ChunkSink& sink) INFERD_EXCLUDES(mu_);
  void Cancel() INFERD_EXCLUDES(mu_);
  void Reset() INFERD_EXCLUDES(mu_);

  // For the curl callbacks (kube_http.cc).
  int OpenSocket(int family, int type, int protocol) INFERD_EXCLUDES(mu_);
  int CloseSocket(int fd) INFERD_EXCLUDES(mu_);
  bool cancelled() INFERD_EXCLUDES(mu_);

 private:
  Mutex mu_;
  bool cancelled_ INFERD_GUARDED_BY(mu_) = false;
  std::set<int> sockets_ INFERD_GUARDED_BY(mu_);  // open by the Get in progress
};

}  // namespace inferd::discovery
