#include "scheduler/batch_runner.h"

#include <algorithm>

#include "core/classification.h"
#include "scheduler/response_stream.h"
#include "scheduler/schedule_log.h"
#include "trace/trace_file.h"

namespace inferd {
namespace {

// Hands a request's answer to a BatchResponseStream when its backend takes
// it over (decoupled models, answers sent from other threads).
class BatchTakeover final : public ResponseTakeover {
 public:
  BatchTakeover(const BatchContext& ctx, std::vector<std::unique_ptr<PendingRequest>>& batch,
                Clock::TimePoint start)
      : ctx_(ctx), batch_(batch), start_(start) {}

  StatusOr<std::shared_ptr<ResponseStream>> TakeOver(ExecutionItem& item) override {
    if (item.index >= batch_.size() || batch_[item.index] == nullptr) {
      return Status(StatusCode::kFailedPrecondition, "the request's answer was taken over already");
    }
    auto stream =
        std::make_shared<BatchResponseStream>(ctx_, std::move(batch_[item.index]), start_);
    item.taken = stream;
    return std::shared_ptr<ResponseStream>(std::move(stream));
  }

 private:
  const BatchContext& ctx_;
  std::vector<std::unique_ptr<PendingRequest>>& batch_;
  const Clock::TimePoint start_;
};

// The compute timestamps of the traced requests of a batch (and, at level
// TENSORS, what went in and came out). Only called when one is traced.
void StampBatch(std::vector<std::unique_ptr<PendingRequest>>& batch,
                const std::vector<std::unique_ptr<InferResponse>>& responses,
                const std::vector<ExecutionItem>& items, Clock::TimePoint start,
                Clock::TimePoint infer_start, Clock::TimePoint infer_end,
                Clock::TimePoint output_end) {
  namespace act = trace::activity;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i] == nullptr) continue;  // taken over: its stream has the request
    const auto& t = batch[i]->request->trace;
    if (!t) continue;
    t->Stamp(act::kComputeStart, start);
    t->Stamp(act::kComputeInputEnd, infer_start);
    t->Stamp(act::kComputeOutputStart, infer_end);
    t->Stamp(act::kComputeEnd, output_end);
    if (t->tensors()) {
      trace::TraceInputs(*t, act::kTensorBackendInput, *batch[i]->request);
      if (!items[i].taken && items[i].status.ok()) trace::TraceOutputs(*t, *responses[i]);
    }
  }
}

}  // namespace

void FailPending(const BatchContext& ctx, PendingRequest& pending, FailReason reason,
                 const Status& status) {
  if (ctx.stats) ctx.stats->RecordFailure(reason, ElapsedNs(pending.arrival, ctx.clock->Now()));
  pending.sink->Finish(status);
}

void RunBatch(const BatchContext& ctx, BackendInstance& instance,
              std::vector<std::unique_ptr<PendingRequest>>& batch, int cpu_threads,
              int instance_index) {
  Clock& clock = *ctx.clock;
  const auto start = clock.Now();
  std::vector<std::unique_ptr<InferResponse>> responses;
  std::vector<ExecutionItem> items;
  responses.reserve(batch.size());
  items.reserve(batch.size());
  uint64_t rows = 0;
  bool traced = false;
  BatchTakeover takeover(ctx, batch, start);
  for (auto& p : batch) {
    traced |= p->request->trace != nullptr;
    auto r = std::make_unique<InferResponse>();
    ExecutionItem& item = items.emplace_back(p->request.get(), r.get());
    item.takeover = &takeover;
    item.index = items.size() - 1;
    item.cpu_threads = cpu_threads;
    responses.push_back(std::move(r));
    rows += static_cast<uint64_t>(std::max<int64_t>(1, p->request->batch_size));
  }
  const auto infer_start = clock.Now();
  LogBatchStart(ctx, batch, rows, instance_index, start);
  instance.Execute(items);
  const auto infer_end = clock.Now();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (items[i].taken) continue;  // answered through its stream
    Status& status = items[i].status;
    if (status.ok()) {
      status = SelectRequestedOutputs(*batch[i]->request, *responses[i], /*strict=*/true);
    }
    if (status.ok() && ctx.model.spec != nullptr) {
      status = ApplyClassification(*ctx.model.spec, *batch[i]->request, *responses[i]);
    }
    if (status.ok()) {
      auto& resp = *responses[i];
      resp.model_name = ctx.model.name;
      resp.model_version = ctx.model.version;
      resp.id = batch[i]->request->id;
    }
  }
  const auto output_end = clock.Now();
  if (traced) StampBatch(batch, responses, items, start, infer_start, infer_end, output_end);
  if (ctx.stats) {
    ctx.stats->RecordExecution(rows, ElapsedNs(start, infer_start),
                               ElapsedNs(infer_start, infer_end), ElapsedNs(infer_end, output_end));
  }
  LogBatchEnd(ctx, batch, items, rows, instance_index, start, infer_start, infer_end, output_end);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (items[i].taken) {
      // An error set on the item is the request's final answer unless the
      // backend sent FINAL already; the stream records the statistics.
      if (!items[i].status.ok()) items[i].taken->SendError(std::move(items[i].status));
      items[i].taken.reset();  // the backend's factory may still hold it
      continue;
    }
    auto& pending = *batch[i];
    const Status& status = items[i].status;
    if (ctx.stats) {
      const uint64_t total = ElapsedNs(pending.arrival, output_end);
      if (status.ok()) {
        ctx.stats->RecordSuccess(total, ElapsedNs(pending.arrival, start));
      } else {
        ctx.stats->RecordFailure(FailReason::kBackend, total);
      }
    }
    if (status.ok()) {
      pending.sink->Send(std::move(responses[i]), /*final=*/true);
    } else {
      pending.sink->Finish(status);
    }
  }
  batch.clear();
}

}  // namespace inferd
