// OtlpTransport: one POST of an encoded export request to the collector.
// The exporter (otlp_exporter.h) owns one and calls it from its worker
// thread only; tests give the exporter a fake.
//
// NewCurlTransport: HTTP/1.1 over libcurl (dlopen'ed through
// objectstore/curl_library.h, so a server that never exports never loads
// it), one easy handle kept for the transport's life so that consecutive
// exports reuse the keep-alive connection.
//
// Threading: Post is not reentrant (one caller: the exporter's worker).
// Blocking: Post blocks for the whole request, bounded by `timeout`.
// Errors: in the result, never thrown.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace inferd::trace {

struct PostResult {
  // 0: no HTTP response (connection refused/reset, timeout, DNS, no libcurl).
  long http_status = 0;
  std::string error;  // why there was no response (transport's words)
  std::string body;   // the response body, at most 4 MiB
  // The server's Retry-After (delay-seconds or an HTTP-date), if it sent one.
  std::optional<std::chrono::milliseconds> retry_after;
};

class OtlpTransport {
 public:
  virtual ~OtlpTransport() = default;
  virtual PostResult Post(const std::string& body, std::chrono::milliseconds timeout) = 0;
};

// `headers` are extra "Name: value" lines (authorisation for a hosted
// collector, say); Content-Type is application/x-protobuf.
std::unique_ptr<OtlpTransport> NewCurlTransport(std::string url, std::vector<std::string> headers);

// A Retry-After header value (RFC 9110: delay-seconds or an IMF-fixdate)
// as a delay from `now`; nullopt when unreadable. Dates in the past are 0.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

}  // namespace inferd::trace
