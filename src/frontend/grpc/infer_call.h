// One unary ModelInfer call (internal to the gRPC front end): its messages
// (InferMessageHolder) and its reactor (InferCall), whose sink
// (InferCall::MakeSink) receives the inference's one response.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "core/response_sink.h"
#include "grpc_service.pb.h"
#include "shm/shm_manager.h"
#include "trace/request_trace.h"

namespace inferd::grpc_frontend {

// The messages of one ModelInfer call, on a protobuf arena whose first block
// is inline (a request and response like `simple`'s need no further
// allocation for their fields). Shared-owned: gRPC's reference is dropped in
// Release(); the decoded InferRequest holds another for as long as its
// inputs point into the request.
class InferMessageHolder final
    : public ::grpc::MessageHolder<inference::ModelInferRequest, inference::ModelInferResponse>,
      public std::enable_shared_from_this<InferMessageHolder> {
 public:
  static InferMessageHolder* Create();
  InferMessageHolder();
  void Release() override;
  // The request, keeping the whole holder (its arena) alive.
  std::shared_ptr<const inference::ModelInferRequest> shared_request() {
    return std::shared_ptr<const inference::ModelInferRequest>(shared_from_this(), request());
  }

 private:
  alignas(std::max_align_t) char block_[2048];  // before arena_: it is the arena's first block
  google::protobuf::Arena arena_;
  std::shared_ptr<InferMessageHolder> self_;  // gRPC's reference
};

// One unary ModelInfer. Finished exactly once: by the inference's final
// signal (any thread) or by OnCancel, whichever claims it first.
// Shared-owned: gRPC's reference is dropped in OnDone and the sink holds
// another, so a final signal arriving after a cancellation finds the object
// alive and leaves the finished call alone.
//
// Inline fast path: if the final signal comes while ModelInfer is still
// running (inline execution, an immediate error), FinishIfCompleted answers
// through the context's default reactor and this object is never gRPC's.
class InferCall final : public ::grpc::ServerUnaryReactor {
 public:
  static std::shared_ptr<InferCall> Create(inference::ModelInferResponse* response);
  explicit InferCall(inference::ModelInferResponse* response) : response_(response) {}

  // The sink to hand to InferenceServer::Infer. One response, final; a
  // non-final one, or none, finishes the call with INTERNAL naming the
  // problem (SingleResponseSink).
  static std::unique_ptr<InferResponseSink> MakeSink(std::shared_ptr<InferCall> call);

  // Outputs to write into shared memory; set before the request is started.
  void set_shm_outputs(std::map<std::string, SharedMemoryOutput> outputs) {
    shm_outputs_ = std::move(outputs);
  }

  // Set when the client cancels or the deadline passes; the scheduler drops
  // the request if it is still queued. Shares ownership of the call.
  static std::shared_ptr<std::atomic<bool>> CancelFlag(const std::shared_ptr<InferCall>& call) {
    return std::shared_ptr<std::atomic<bool>>(call, &call->cancelled_);
  }

  // A traced request's trace: GRPC_SEND_START before the response is
  // encoded, GRPC_SEND_END when gRPC is done with the call; released then.
  void set_trace(std::shared_ptr<trace::RequestTrace> trace) { trace_ = std::move(trace); }

  void OnCancel() override;
  void OnDone() override;

  // Called by ModelInfer once the inference is started. If it already
  // completed, answers through the context's default reactor (no reactor
  // of ours for gRPC to call back: one thread hop fewer) and returns that;
  // else nullptr, and this call is gRPC's reactor.
  ::grpc::ServerUnaryReactor* FinishIfCompleted(::grpc::CallbackServerContext* ctx);

 private:
  class Sink;
  // The inference's result, exactly once, from any thread.
  void Complete(Status status, std::unique_ptr<InferResponse> response);

  enum Stage { kInHandler, kInline, kAsync };
  inference::ModelInferResponse* const response_;
  std::atomic<int> stage_{kInHandler};
  Status inline_status_;                            // set before stage_ becomes kInline
  std::unique_ptr<InferResponse> inline_response_;  // likewise
  std::map<std::string, SharedMemoryOutput> shm_outputs_;
  std::atomic<bool> claimed_{false};
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<trace::RequestTrace> trace_;
  std::shared_ptr<InferCall> self_;
};

}  // namespace inferd::grpc_frontend
