// InferResponseSink: where the responses to one inference request go.
//
// A request has zero or more responses (a decoupled model may send many;
// every model today sends exactly one), then exactly one final signal:
//
//   Send(response, /*final=*/false)   zero or more times, then one of
//   Send(response, /*final=*/true)    the last response, or
//   Finish(Status::Ok())              "no more responses" without one, or
//   Finish(error)                     the request failed (after any sends).
//
// Ownership: the producer (the scheduler that holds the request, and the
// backend glue or ensemble acting for it) owns the sink through a
// unique_ptr from InferenceServer::Infer on, and destroys it after the
// final signal. Responses are moved into the sink.
//
// Threading: calls for one request never overlap (the producer orders them)
// but may come from different threads. Implementations never block: they
// encode and hand bytes to a transport, or record and return. Sinks of
// different requests are independent.
//
// Errors: a call after the final signal is a bug in the producer;
// implementations ignore it.
#pragma once

#include <functional>
#include <memory>

#include "core/infer_request.h"
#include "core/status.h"

namespace inferd {

class InferResponseSink {
 public:
  virtual ~InferResponseSink() = default;
  virtual void Send(std::unique_ptr<InferResponse> response, bool final) = 0;
  virtual void Finish(Status status) = 0;
};

// A sink for consumers that expect exactly one response (one-shot callers:
// ensemble steps, tests): `done` runs once, with the final response, or
// with the error. A non-final Send, or a final signal without a response,
// completes it with INTERNAL naming the broken expectation.
std::unique_ptr<InferResponseSink> MakeSingleResponseSink(
    std::function<void(Status, std::unique_ptr<InferResponse>)> done);

}  // namespace inferd
