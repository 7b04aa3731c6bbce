#include "frontend/grpc/infer_call.h"

#include "frontend/grpc/grpc_codec.h"

namespace inferd::grpc_frontend {
namespace {

google::protobuf::ArenaOptions InlineBlock(char* block, size_t size) {
  google::protobuf::ArenaOptions o;
  o.initial_block = block;
  o.initial_block_size = size;
  return o;
}

}  // namespace

// ---- InferMessageHolder ----------------------------------------------------------

InferMessageHolder* InferMessageHolder::Create() {
  auto holder = std::make_shared<InferMessageHolder>();
  holder->self_ = holder;
  return holder.get();
}

InferMessageHolder::InferMessageHolder() : arena_(InlineBlock(block_, sizeof(block_))) {
  set_request(google::protobuf::Arena::CreateMessage<inference::ModelInferRequest>(&arena_));
  set_response(google::protobuf::Arena::CreateMessage<inference::ModelInferResponse>(&arena_));
}

void InferMessageHolder::Release() {
  auto last = std::move(self_);  // may destroy *this when it goes out of scope
}

// ---- InferCall --------------------------------------------------------------------

class InferCall::Sink final : public SingleResponseSink<Sink> {
 public:
  explicit Sink(std::shared_ptr<InferCall> call) : call_(std::move(call)) {}
  void Complete(Status status, std::unique_ptr<InferResponse> response) {
    call_->Complete(std::move(status), std::move(response));
  }

 private:
  const std::shared_ptr<InferCall> call_;
};

std::shared_ptr<InferCall> InferCall::Create(inference::ModelInferResponse* response) {
  auto call = std::make_shared<InferCall>(response);
  call->self_ = call;
  return call;
}

std::unique_ptr<InferResponseSink> InferCall::MakeSink(std::shared_ptr<InferCall> call) {
  return std::make_unique<Sink>(std::move(call));
}

void InferCall::Complete(Status status, std::unique_ptr<InferResponse> response) {
  if (stage_.load(std::memory_order_acquire) == kInHandler) {
    // Completed inside ModelInfer (inline execution): leave the result for
    // the handler, which answers like a plain unary method.
    inline_status_ = std::move(status);
    inline_response_ = std::move(response);
    int expected = kInHandler;
    if (stage_.compare_exchange_strong(expected, kInline, std::memory_order_acq_rel)) return;
    status = std::move(inline_status_);  // the handler has returned meanwhile
    response = std::move(inline_response_);
  }
  if (claimed_.exchange(true)) return;  // cancelled: the call is finished
  if (trace_) trace_->Stamp(trace::activity::kGrpcSendStart);
  if (!status.ok()) return Finish(ToGrpcStatus(status));
  // The response message lives until OnDone, which cannot come before Finish.
  Finish(ToGrpcStatus(EncodeInferResponse(*response, shm_outputs_, response_)));
}

void InferCall::OnCancel() {
  cancelled_.store(true, std::memory_order_relaxed);
  if (!claimed_.exchange(true)) Finish(::grpc::Status::CANCELLED);
}

void InferCall::OnDone() {
  if (trace_) {
    trace_->Stamp(trace::activity::kGrpcSendEnd);
    trace_.reset();
  }
  auto last = std::move(self_);  // may destroy *this when it goes out of scope
}

::grpc::ServerUnaryReactor* InferCall::FinishIfCompleted(::grpc::CallbackServerContext* ctx) {
  int expected = kInHandler;
  if (stage_.compare_exchange_strong(expected, kAsync, std::memory_order_acq_rel)) {
    return nullptr;
  }
  Status status = inline_status_;
  if (trace_) trace_->Stamp(trace::activity::kGrpcSendStart);
  if (status.ok()) status = EncodeInferResponse(*inline_response_, shm_outputs_, response_);
  self_.reset();  // gRPC never holds this object
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  if (trace_) {
    trace_->Stamp(trace::activity::kGrpcSendEnd);  // handed to gRPC
    trace_.reset();
  }
  return reactor;
}

}  // namespace inferd::grpc_frontend
