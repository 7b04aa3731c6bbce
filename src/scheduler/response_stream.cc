#include "scheduler/response_stream.h"

#include <algorithm>

#include "core/classification.h"

namespace inferd {
namespace {}  // namespace

Status SelectRequestedOutputs(const InferRequest& request, InferResponse& response, bool strict) {
  if (request.outputs.empty()) return Status::Ok();
  if (strict) {
    for (const auto& wanted : request.outputs) {
      if (response.FindOutput(wanted.name) == nullptr) {
        return Internal("model did not produce requested output '" + wanted.name + "'");
      }
    }
  }
  std::erase_if(response.outputs, [&](const InferOutput& o) {
    return std::none_of(request.outputs.begin(), request.outputs.end(),
                        [&](const RequestedOutput& r) { return r.name == o.name; });
  });
  return Status::Ok();
}

BatchResponseStream::BatchResponseStream(const BatchContext& ctx,
                                         std::unique_ptr<PendingRequest> pending,
                                         Clock::TimePoint exec_start)
    : model_(ctx.model),
      stats_(ctx.stats),
      clock_(ctx.clock),
      decoupled_(ctx.model.spec != nullptr && ctx.model.spec->decoupled),
      queue_ns_(ElapsedNs(pending->arrival, exec_start)),
      pending_(std::move(pending)) {}

BatchResponseStream::~BatchResponseStream() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!final_sent_) FinishLocked(Internal("backend released the request without a final response"));
}

Status BatchResponseStream::Prepare(InferResponse& response) const {
  const InferRequest& request = *pending_->request;
  INFERD_RETURN_IF_ERROR(SelectRequestedOutputs(request, response, /*strict=*/!decoupled_));
  if (model_.spec != nullptr) {
    INFERD_RETURN_IF_ERROR(ApplyClassification(*model_.spec, request, response));
  }
  response.model_name = model_.name;
  response.model_version = model_.version;
  response.id = request.id;
  return Status::Ok();
}

void BatchResponseStream::FinishLocked(Status status) {
  final_sent_ = true;
  held_.reset();
  if (stats_ != nullptr) {
    const uint64_t total = ElapsedNs(pending_->arrival, clock_->Now());
    if (status.ok()) {
      stats_->RecordSuccess(total, queue_ns_);
    } else {
      stats_->RecordFailure(FailReason::kBackend, total);
    }
  }
  pending_->sink->Finish(std::move(status));
}

void BatchResponseStream::SendFinalLocked(std::unique_ptr<InferResponse> response) {
  final_sent_ = true;
  if (stats_ != nullptr) {
    stats_->RecordSuccess(ElapsedNs(pending_->arrival, clock_->Now()), queue_ns_);
  }
  pending_->sink->Send(std::move(response), /*final=*/true);
}

Status BatchResponseStream::Send(std::unique_ptr<InferResponse> response, bool final) {
  std::lock_guard<std::mutex> lock(mu_);
  if (final_sent_) {
    return Status(StatusCode::kFailedPrecondition, "the request's final response was sent already");
  }
  if (response == nullptr && !final) {
    return InvalidArgument("a response is required unless the FINAL flag is set");
  }
  if (IsCancelled()) {  // nobody reads them: dropped; FINAL still ends the request
    if (final) FinishLocked(Status(StatusCode::kCancelled, "the request was cancelled"));
    return Status::Ok();
  }
  if (response != nullptr) {
    if (!decoupled_ && responded_) {
      return Status(
          StatusCode::kFailedPrecondition,
          "model '" + model_.name + "' is not decoupled: a request takes exactly one response");
    }
    responded_ = true;
    if (Status s = Prepare(*response); !s.ok()) {
      FinishLocked(std::move(s));  // the answer is broken: the request fails
      return Status::Ok();
    }
  }
  if (!decoupled_) {
    if (response != nullptr) held_ = std::move(response);
    if (!final) return Status::Ok();
    if (held_ == nullptr) {
      FinishLocked(Internal("model '" + model_.name +
                            "' is not decoupled but sent FINAL without a response"));
      return Status::Ok();
    }
    SendFinalLocked(std::move(held_));
    return Status::Ok();
  }
  if (response == nullptr) {
    FinishLocked(Status::Ok());
  } else if (final) {
    SendFinalLocked(std::move(response));
  } else {
    pending_->sink->Send(std::move(response), /*final=*/false);
  }
  return Status::Ok();
}

void BatchResponseStream::SendError(Status error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (final_sent_) return;
  if (error.ok()) error = Internal("backend sent an error without a message");
  FinishLocked(std::move(error));
}

}  // namespace inferd
