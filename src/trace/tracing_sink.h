// TracingSink: the decorator InferenceServer puts around the sink of a
// traced request. It stamps REQUEST_END when the final signal passes
// (before the front end encodes and sends: HTTP_SEND_START comes after it)
// and lets the trace go then, so that the request's trace completes as soon
// as its other holders (the front end, the request) are done.
//
// Ownership: each decorator owns its inner sink and holds the trace.
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

// The front end's decorator for a traced request whose sink answers within
// its final signal (HTTP: the response is encoded and handed to the
// transport inside Send/Finish): stamps `start` before the final signal is
// passed on and `end` once the inner sink has returned, then lets the trace
// go. Only traced requests pay for it (a sampled request's sink is wrapped;
// the others are not).
class FrontendTraceSink final : public InferResponseSink {
 public:
  FrontendTraceSink(std::unique_ptr<InferResponseSink> inner, std::shared_ptr<RequestTrace> trace,
                    const char* start, const char* end)
      : inner_(std::move(inner)), trace_(std::move(trace)), start_(start), end_(end) {}

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (inner_ == nullptr) return;
    if (final) trace_->Stamp(start_);
    inner_->Send(std::move(response), final);
    if (final) Done();
  }
  void Finish(Status status) override {
    if (inner_ == nullptr) return;
    trace_->Stamp(start_);
    inner_->Finish(std::move(status));
    Done();
  }

 private:
  void Done() {
    trace_->Stamp(end_);
    trace_.reset();
    inner_.reset();
  }

  std::unique_ptr<InferResponseSink> inner_;
  std::shared_ptr<RequestTrace> trace_;
  const char* const start_;
  const char* const end_;
};

}  // namespace inferd::trace
