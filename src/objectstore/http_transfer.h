// One HTTP/1.1 request over libcurl, with a pool of reusable easy handles
// (keep-alive: a handle keeps its connections across requests). Knows
// nothing of S3: S3Client builds the URL and the signed headers, and maps
// the raw outcome returned here to a Status. Internal to src/objectstore/.
//
// Ownership: a HandlePool owns its idle handles and frees them when
// destroyed; Perform borrows one for the call.
// Threading: Perform may be called from any thread, concurrently (the pool
// is under a mutex; each call has its own handle).
// Blocking: Perform blocks for the whole transfer, bounded by the options'
// timeouts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace inferd::s3 {

struct HttpRequest {
  std::string method;  // "GET" or "HEAD"
  std::string url;     // scheme://host[:port]/path?query, already encoded
  // Extra request headers, "Name: value" (Host among them: what is signed
  // is what is sent).
  std::vector<std::string> headers;
};

struct TransferOptions {
  long connect_timeout_ms = 5000;
  long low_speed_bytes_per_s = 1024;
  long low_speed_window_s = 30;
  long total_timeout_ms = 0;  // 0: none (streamed downloads of any size)
};

// Called with each chunk of a 2xx body; a non-OK status aborts the transfer
// and becomes HttpOutcome::sink_status.
using BodySink = std::function<Status(const char* data, size_t size)>;

struct HttpOutcome {
  int curl_code = 0;        // CURLcode; 0 = the transfer completed
  std::string curl_error;   // curl's detail for a failure (no headers in it)
  long http_status = 0;     // 0: no response
  bool connected = false;   // the TCP (and TLS) connection was made
  Status sink_status;       // the sink's error that aborted the transfer
  uint64_t body_bytes = 0;  // 2xx body bytes handed to the sink
  int64_t content_length = -1;
  std::string etag;           // response header, raw (quoted)
  std::string bucket_region;  // x-amz-bucket-region, when S3 says
  // SSE-KMS or SSE-C: S3's ETag is then not the MD5 of the data, even for a
  // single-part object (x-amz-server-side-encryption: aws:kms...,
  // x-amz-server-side-encryption-customer-algorithm).
  bool etag_not_md5 = false;
  std::string error_body;  // a non-2xx body, first 64 KiB
};

class HandlePool {
 public:
  HandlePool();
  ~HandlePool();
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  // The request, once; retried once on a fresh connection when a reused
  // keep-alive connection turns out to have been closed by the server
  // before any response byte (the race every keep-alive client has). No
  // other retry: the caller decides.
  HttpOutcome Perform(const HttpRequest& request, const TransferOptions& options,
                      const BodySink& sink);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace inferd::s3
