// The response sinks of the generate extension (docs/http.md, "Generate
// extension").
//
// GenerateSink (/generate): the request must produce exactly one response
// (a decoupled model's one data response followed by a flags-only final
// counts as one). It is buffered until the final signal, so the status is
// chosen knowing the outcome: 200 with the response's JSON object; an error
// with its mapped status and {"error": message}; zero or several responses
// 400 with Triton's "generate expects model to produce exactly 1 response"
// text (Triton has already sent 200 by then; docs/http.md).
//
// GenerateStreamSink (/generate_stream): Server-Sent Events. The status is
// chosen at the first signal (200 unless it is an error); each response is
// one `data: <json>\n\n` event written as it comes, an error an event
// `data: {"error": ...}`, a final signal without a response no event; the
// body ends after the final signal. An error signalled while the handler
// is still inside InferenceServer::Infer (validation, a full queue) is a
// plain JSON error body instead, as for any request refused before
// inference. Once the client has gone the events are not even encoded.
//
// Ownership: each holds the responder (shared with the transport, which
// keeps the connection). Threading: the sink contract
// (core/response_sink.h).
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "core/response_sink.h"
#include "frontend/http/http_types.h"

namespace inferd::http {

// Triton's text for a /generate request that did not get exactly one
// response.
inline constexpr const char* kGenerateNotOneResponse =
    "generate expects model to produce exactly 1 response, use generate stream for model that "
    "generates various number of responses";

class GenerateSink final : public InferResponseSink {
 public:
  explicit GenerateSink(std::shared_ptr<HttpResponder> responder)
      : responder_(std::move(responder)) {}
  void Send(std::unique_ptr<InferResponse> response, bool final) override;
  void Finish(Status status) override;

 private:
  void Complete(const Status& status);

  const std::shared_ptr<HttpResponder> responder_;
  std::unique_ptr<InferResponse> response_;  // the first response
  int responses_ = 0;
  bool done_ = false;
};

class GenerateStreamSink final : public InferResponseSink {
 public:
  // Constructed on the handler's thread: an error signalled there before
  // handler_returned() is set is a refusal before inference.
  explicit GenerateStreamSink(std::shared_ptr<HttpResponder> responder)
      : responder_(std::move(responder)), handler_thread_(std::this_thread::get_id()) {}

  // Set by the handler once Infer has returned: errors after that are
  // in-band events.
  std::shared_ptr<std::atomic<bool>> handler_returned() const { return handler_returned_; }

  void Send(std::unique_ptr<InferResponse> response, bool final) override;
  void Finish(Status status) override;

 private:
  void Start(int status);
  void Event(const std::string& json);
  void End();

  const std::shared_ptr<HttpResponder> responder_;
  const std::thread::id handler_thread_;
  const std::shared_ptr<std::atomic<bool>> handler_returned_ =
      std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<HttpStream> stream_;  // once the status is chosen
  bool done_ = false;
};

}  // namespace inferd::http
