// Protocol-level HTTP request/response values passed between the Beast
// transport (http_server.cc) and the API handlers, so that handlers never
// include Beast.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace inferd::http {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query string, not yet percent-decoded
  std::string query;   // what follows the first '?', not decoded ("" if none)
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<std::string> body;
  // Becomes true when the client disconnects before the response is sent.
  std::shared_ptr<std::atomic<bool>> cancelled;
  // When the request's first bytes were read (steady clock; the trace's
  // HTTP_RECV_START). Unset for requests not read from a socket.
  std::chrono::steady_clock::time_point received{};

  // Case-insensitive header lookup; nullptr if absent.
  const std::string* Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// The body of a streamed response, written in parts as they are produced
// (chunked transfer on HTTP/1.1; on HTTP/1.0 the body ends when the
// connection closes). Calls on one stream must not overlap (one producer
// at a time, as a response sink's calls) but may come from any thread, one
// after another; the transport writes the parts in call order on the
// connection's own thread and never blocks the caller. End() finishes the
// body (the connection then continues, keep-alive); a stream destroyed
// without End() is ended by its destructor. Once the client has gone (a
// disconnect or a failed write), Closed() is true, the request's
// `cancelled` flag is set and parts are dropped.
class HttpStream {
 public:
  virtual ~HttpStream() = default;
  virtual void Write(std::string part) = 0;
  virtual void End() = 0;
  virtual bool Closed() const = 0;
};

// Sends the one response to a request. Thread-safe; may be called from any
// thread (an instance thread completing an inference, typically). Calling
// Send more than once is a bug (later calls are ignored).
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void Send(HttpResponse response) = 0;
  // Answers with a streamed response instead of Send: `head` gives the
  // status, content type and headers (its body, if any, is the first
  // part). nullptr: this responder cannot stream (StartStream below then
  // buffers). Called at most once, and instead of Send.
  // By value: an implementation takes the head over.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual std::unique_ptr<HttpStream> OpenStream(HttpResponse /*head*/) { return nullptr; }
};

// A streamed response on `responder`: the transport's own stream, or one
// that collects the parts and sends them as one response at End (a
// responder that cannot stream: a test double, a decorator).
std::unique_ptr<HttpStream> StartStream(const std::shared_ptr<HttpResponder>& responder,
                                        HttpResponse head);

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<HttpResponder>)>;

// {"error": "<message>"} with the given status.
HttpResponse ErrorResponse(int status, const std::string& message);

// The answer for a Status: an empty 200 when OK, else its message with the
// HTTP status of HttpStatusFromCode (the one code table).
HttpResponse StatusResponse(const Status& status);

}  // namespace inferd::http
