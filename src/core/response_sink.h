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
// `response` is never null. Every path in the server today sends exactly one
// response, final, or finishes with an error.
//
// Ownership: the sink is owned through a unique_ptr by whoever must
// signal it next, and destroyed by its last owner after the final signal.
// A front end creates it and hands it to InferenceServer::Infer, which wraps
// it in its in-flight decorator (which owns it); the decorator goes to the
// model's scheduler inside a PendingRequest (wrapped once more by the
// reorder buffer under preserve_ordering), and the batch runner, or the
// ensemble acting for the request, signals it. A decorator forwards the
// signals in order and lets its inner sink go after the final one. A
// front-end sink keeps what it needs (a call, a connection) alive by shared
// ownership; a sink that points at something longer-lived (the in-flight
// tracker, an ensemble's scheduler) relies on it waiting for its requests
// before it goes (Stop). Responses are moved into the sink, which may keep
// or drop them.
//
// Threading: calls for one request never overlap (its producer orders them)
// but may come from different threads, one after another; the final signal
// may come on the thread that called Infer (an immediate error, an inline
// run). Implementations never block: they encode and hand bytes to a
// transport, or record and return. A sink may start new requests (an
// ensemble step's sink launches the next step through Infer). Sinks of
// different requests are independent.
//
// Errors: a call after the final signal is a bug in the producer;
// implementations ignore it. A sink destroyed without a final signal is
// also a producer bug; the server's decorators (inflight_tracker.h, and the
// reorder buffer, scheduler/response_order.h) then finish the request with
// INTERNAL, so no client, and no later request, waits forever.
//
// Adding a response path: derive from InferResponseSink (0..N responses)
// or from SingleResponseSink<Derived> (consumers of exactly one response),
// and pass it to InferenceServer::Infer.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/infer_request.h"
#include "core/status.h"

namespace inferd {

class InferResponseSink {
 public:
  virtual ~InferResponseSink() = default;
  virtual void Send(std::unique_ptr<InferResponse> response, bool final) = 0;
  virtual void Finish(Status status) = 0;
};

// A decorator that forwards every signal to `inner` and, once the final
// one has passed, lets the inner sink go (a front end's sink may hold a
// connection) and calls OnFinal() — exactly once. Calls after the final
// signal are ignored. A subclass whose sink may be dropped without a final
// signal decides in its own destructor what that means (done() is false).
class ForwardingSink : public InferResponseSink {
 public:
  explicit ForwardingSink(std::unique_ptr<InferResponseSink> inner) : inner_(std::move(inner)) {}
  void Send(std::unique_ptr<InferResponse> response, bool final) final {
    if (done_) return;
    inner_->Send(std::move(response), final);
    if (final) Close();
  }
  void Finish(Status status) final {
    if (done_) return;
    inner_->Finish(std::move(status));
    Close();
  }

 protected:
  bool done() const { return done_; }
  virtual void OnFinal() = 0;

 private:
  void Close() {
    done_ = true;
    inner_.reset();
    OnFinal();
  }
  std::unique_ptr<InferResponseSink> inner_;
  bool done_ = false;
};

// What a consumer of exactly one response is told when the producer breaks
// that expectation (both INTERNAL).
Status NonFinalResponseError(const InferResponse& response);
Status NoResponseError();

// Adapts the sink contract to a consumer that takes exactly one response
// (HTTP, gRPC unary, one stream slot, an ensemble step). `Derived` defines
//
//   void Complete(Status status, std::unique_ptr<InferResponse> response);
//
// (or `const Status&`)
//
// called exactly once: with OK and the final response, or with an error and
// null. A non-final Send, or Finish(OK) without a response, completes with
// INTERNAL naming the problem; every call after that is ignored. No extra
// virtual call: Complete is resolved statically.
template <typename Derived>
class SingleResponseSink : public InferResponseSink {
 public:
  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (done_) return;
    done_ = true;
    if (!final) return Self().Complete(NonFinalResponseError(*response), nullptr);
    if (response == nullptr) return Self().Complete(NoResponseError(), nullptr);
    Self().Complete(Status::Ok(), std::move(response));
  }
  void Finish(Status status) override {
    if (done_) return;
    done_ = true;
    Self().Complete(status.ok() ? NoResponseError() : std::move(status), nullptr);
  }

 protected:
  bool completed() const { return done_; }

 private:
  Derived& Self() { return static_cast<Derived&>(*this); }
  bool done_ = false;  // calls never overlap (the contract): no atomic needed
};

// A SingleResponseSink calling `done` (for tests and one-shot callers that
// have no class of their own).
std::unique_ptr<InferResponseSink> MakeSingleResponseSink(
    std::function<void(Status, std::unique_ptr<InferResponse>)> done);

}  // namespace inferd
