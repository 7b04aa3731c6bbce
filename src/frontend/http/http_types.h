// Protocol-level HTTP request/response values passed between the Beast
// transport (http_server.cc) and the API handlers, so that handlers never
// include Beast.
#pragma once

#include <atomic>
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

  // Case-insensitive header lookup; nullptr if absent.
  const std::string* Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Sends the one response to a request. Thread-safe; may be called from any
// thread (an instance thread completing an inference, typically). Calling
// Send more than once is a bug (later calls are ignored).
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void Send(HttpResponse response) = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<HttpResponder>)>;

// {"error": "<message>"} with the given status.
HttpResponse ErrorResponse(int status, const std::string& message);

// The answer for a Status: an empty 200 when OK, else its message with the
// HTTP status of HttpStatusFromCode (the one code table).
HttpResponse StatusResponse(const Status& status);

}  // namespace inferd::http
