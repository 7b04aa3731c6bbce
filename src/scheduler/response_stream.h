// The ResponseStream of a request whose backend took its answer over
// (backend/backend.h, ExecutionItem::TakeOverResponse): decoupled models'
// 0..N responses, or any model's one response sent from another thread.
//
// What it does to each response, as RunBatch does for ordinary answers:
// keeps only the requested outputs (a decoupled response may lack some:
// pruned, never failed, as Triton does; a model that is not decoupled must
// produce each, as on the ordinary path), applies the classification
// extension, stamps model name, version and request id. It records the
// request's statistics once, at FINAL. Rules: a decoupled model sends any
// number of responses then FINAL (with the last one or alone, which the
// sink receives as Finish(OK)); any other model exactly one response, with
// FINAL or followed by FINAL alone. After the client went away (the
// request's cancel flag) responses are dropped and FINAL finishes the
// request CANCELLED.
//
// Ownership: owns the PendingRequest (request and sink) from the takeover
// until destruction; held by shared_ptr (the backend's factory, and the
// batch runner until Execute returned). Destroyed before FINAL: the
// request finishes with INTERNAL "backend released the request without a
// final response". The model identity's spec and stats must outlive it
// (backends release their factories before their model is finalized).
//
// Threading: any thread; one mutex serialises the calls to the sink (which
// the sink contract requires) and the FINAL bookkeeping.
#pragma once

#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "scheduler/batch_runner.h"

namespace inferd {

class BatchResponseStream final : public ResponseStream {
 public:
  // `exec_start`: when the request's batch began (its queue time ends).
  BatchResponseStream(const BatchContext& ctx, std::unique_ptr<PendingRequest> pending,
                      Clock::TimePoint exec_start);
  ~BatchResponseStream() override;

  Status Send(std::unique_ptr<InferResponse> response, bool final) override;
  void SendError(Status error) override;
  bool IsCancelled() const override { return pending_->request->IsCancelled(); }
  bool decoupled() const override { return decoupled_; }

 private:
  // Prunes, classifies and stamps `response` for the sink.
  Status Prepare(InferResponse& response) const;
  // Records the request's statistics and gives the sink its final signal.
  void FinishLocked(Status status);
  void SendFinalLocked(std::unique_ptr<InferResponse> response);

  const ModelIdentity model_;
  ModelStats* const stats_;
  Clock* const clock_;
  const bool decoupled_;
  const uint64_t queue_ns_;
  std::mutex mu_;
  std::unique_ptr<PendingRequest> pending_;  // request and sink; the sink used under mu_
  bool final_sent_ = false;                  // guarded by mu_
  bool responded_ = false;                   // a response went (or waits), by mu_
  std::unique_ptr<InferResponse> held_;      // not decoupled: the response awaiting FINAL
};

// Keeps the outputs `request` asked for, in the backend's order. `strict`:
// each requested output must be there (INTERNAL naming it otherwise).
Status SelectRequestedOutputs(const InferRequest& request, InferResponse& response, bool strict);

}  // namespace inferd
