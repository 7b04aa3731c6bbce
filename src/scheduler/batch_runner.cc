#include "scheduler/batch_runner.h"

#include <algorithm>

#include "core/classification.h"

namespace inferd {
namespace {

uint64_t Ns(Clock::TimePoint a, Clock::TimePoint b) {
  return b > a ? static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count())
               : 0;
}

// Keeps only the requested outputs (in the backend's order) and checks that
// the backend produced each of them.
Status SelectOutputs(const InferRequest& request, InferResponse& response) {
  if (request.outputs.empty()) return Status::Ok();
  for (const auto& wanted : request.outputs) {
    if (response.FindOutput(wanted.name) == nullptr) {
      return Internal("model did not produce requested output '" + wanted.name + "'");
    }
  }
  std::erase_if(response.outputs, [&](const InferOutput& o) {
    return std::none_of(request.outputs.begin(), request.outputs.end(),
                        [&](const RequestedOutput& r) { return r.name == o.name; });
  });
  return Status::Ok();
}

}  // namespace

void FailPending(const BatchContext& ctx, PendingRequest& pending, FailReason reason,
                 const Status& status) {
  if (ctx.stats) ctx.stats->RecordFailure(reason, Ns(pending.arrival, ctx.clock->Now()));
  pending.sink->Finish(status);
}

void RunBatch(const BatchContext& ctx, BackendInstance& instance,
              std::vector<std::unique_ptr<PendingRequest>>& batch) {
  Clock& clock = *ctx.clock;
  const auto start = clock.Now();
  std::vector<std::unique_ptr<InferResponse>> responses;
  std::vector<ExecutionItem> items;
  responses.reserve(batch.size());
  items.reserve(batch.size());
  uint64_t rows = 0;
  for (auto& p : batch) {
    auto r = std::make_unique<InferResponse>();
    items.push_back(ExecutionItem{p->request.get(), r.get(), Status::Ok()});
    responses.push_back(std::move(r));
    rows += static_cast<uint64_t>(std::max<int64_t>(1, p->request->batch_size));
  }
  const auto infer_start = clock.Now();
  instance.Execute(items);
  const auto infer_end = clock.Now();
  for (size_t i = 0; i < batch.size(); ++i) {
    Status& status = items[i].status;
    if (status.ok()) status = SelectOutputs(*batch[i]->request, *responses[i]);
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
  if (ctx.stats) {
    ctx.stats->RecordExecution(rows, Ns(start, infer_start), Ns(infer_start, infer_end),
                               Ns(infer_end, output_end));
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& pending = *batch[i];
    const Status& status = items[i].status;
    if (ctx.stats) {
      const uint64_t total = Ns(pending.arrival, output_end);
      if (status.ok()) {
        ctx.stats->RecordSuccess(total, Ns(pending.arrival, start));
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
