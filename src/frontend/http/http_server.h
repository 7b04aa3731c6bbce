// HttpServer: the HTTP/1.1 transport (Boost.Beast on Asio). Accepts
// connections, reads one request at a time per connection (keep-alive),
// hands it to the handler and writes the response whenever the handler's
// responder is called, from any thread.
//
// Threading: `threads` I/O threads run one io_context; each connection is
// serialised on its own strand. Handlers must not block: a model never runs
// on an I/O thread.
//
// Limits: bodies larger than `max_body_bytes` are refused from their
// Content-Length (or as soon as chunked data passes it), before they are
// buffered whole.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "frontend/http/http_types.h"

namespace inferd::http {

struct HttpServerOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;  // 0: pick a free port
  int threads = 4;
  size_t max_body_bytes = 64 << 20;
  size_t max_header_bytes = 64 << 10;
  int idle_timeout_secs = 60;  // keep-alive idle and slow-read bound
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();

  // Binds and starts the I/O threads.
  Status Start();
  uint16_t port() const;

  // Stops accepting; responses on open connections say Connection: close.
  void StopAccepting();
  // Waits until every request read so far has been answered (or timeout);
  // true if idle.
  bool WaitForIdle(int timeout_ms);
  // Stops the I/O threads and closes every connection.
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferd::http
