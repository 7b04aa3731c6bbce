// TracingSink: the decorator InferenceServer puts around the sink of a
// traced request. It stamps REQUEST_END when the final signal passes
// (before the front end encodes and sends: HTTP_SEND_START comes after it)
// and lets the trace go then, so that the request's trace completes as soon
// as its other holders (the front end, the request) are done.
//
// Ownership: owns the inner sink (ForwardingSink) and holds the trace.
// Threading: the sink contract (core/response_sink.h).
#pragma once

#include <memory>

#include "core/response_sink.h"
#include "trace/request_trace.h"

namespace inferd::trace {

class TracingSink final : public InferResponseSink {
 public:
  TracingSink(std::unique_ptr<InferResponseSink> inner, std::shared_ptr<RequestTrace> trace)
      : inner_(std::move(inner)), trace_(std::move(trace)) {}
  // A sink dropped without a final signal (a producer bug) still ends the
  // trace; the inner sink's own decorator answers the client.
  ~TracingSink() override {
    if (trace_) trace_->Stamp(activity::kRequestEnd);
  }

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (inner_ == nullptr) return;
    if (final) End();
    inner_->Send(std::move(response), final);
    if (final) inner_.reset();
  }
  void Finish(Status status) override {
    if (inner_ == nullptr) return;
    End();
    inner_->Finish(std::move(status));
    inner_.reset();
  }

 private:
  void End() {
    trace_->Stamp(activity::kRequestEnd);
    trace_.reset();
  }

  std::unique_ptr<InferResponseSink> inner_;
  std::shared_ptr<RequestTrace> trace_;
};

}  // namespace inferd::trace
