// HttpServer: the HTTP/1.1 transport (Boost.Beast on Asio). Accepts
// connections, reads one request at a time per connection (keep-alive),
// hands it to the handler and writes the response whenever the handler's
// responder is called, from any thread. A responder may instead open a
// streamed response (HttpStream, http_types.h): the head is written at
// once, each part as a chunk as it comes, the last chunk at End; parts that
// a slow client leaves unread are bounded (64 MiB: then the request is
// cancelled and the connection closed), and a client that goes away
// cancels the request (its `cancelled` flag).
//
// TLS: with `tls.enabled` every connection must complete a TLS handshake
// (within the header timeout) before a request is read; with `tls.mutual`
// the client must present a certificate signed by `tls.root_file`.
//
// Threading: each of `threads` I/O threads runs an io_context of its own;
// a connection lives on one of them (dealt in turn), which serialises it.
// Handlers must not block: only a model measured faster than its inline
// bound (the scheduler's inline_max_exec_us) runs on an I/O thread.
//
// Limits (docs/security.md): bodies larger than `max_body_bytes` are refused
// from their Content-Length (or as soon as chunked data passes it), before
// they are buffered whole; headers over `max_header_bytes` get 431; a chunked
// body of more than `max_chunks` chunks is refused. A request is read in
// three timed phases: waiting for its first byte (`idle_timeout_secs`, the
// keep-alive idle bound), the rest of its header (`header_timeout_secs`) and
// its body (`body_timeout_secs`); a client that dribbles bytes is
// disconnected when its phase ends. At most `max_connections` connections
// are open at once; one more is answered 503 and closed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "frontend/http/http_types.h"
#include "frontend/tls_options.h"

namespace inferd::http {

struct HttpServerOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;  // 0: pick a free port
  int threads = 4;
  size_t max_body_bytes = 64 << 20;    // --http-max-input-size
  size_t max_header_bytes = 64 << 10;  // --http-max-header-size
  uint64_t max_chunks = 1 << 16;       // --http-max-chunks
  int max_connections = 1024;          // --http-max-connections
  int idle_timeout_secs = 60;          // --http-idle-timeout-secs
  int header_timeout_secs = 10;        // --http-header-timeout-secs
  int body_timeout_secs = 60;          // --http-body-timeout-secs
  TlsOptions tls;                      // HTTPS (--http-use-ssl ...)
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
