#include "scheduler/schedule_log.h"

#include "core/request_log.h"
#include "core/sanitize.h"

namespace inferd {
namespace {

constexpr std::string_view kComponent = "scheduler";

uint64_t Us(Clock::TimePoint a, Clock::TimePoint b) { return ElapsedNs(a, b) / 1000; }

std::string Instance(int instance) {
  return instance < 0 ? std::string("?") : std::to_string(instance);
}

}  // namespace

void LogEnqueuedSlow(std::string_view model, int64_t version, std::string_view id, bool cached) {
  INFERD_VLOG_CTX(1, kComponent, LogField(model), LogField(id))
      << (cached ? "answered from the response cache: " : "enqueued: ")
      << RequestLogName(model, version, id);
}

void LogBatchStartSlow(const BatchContext& ctx,
                       const std::vector<std::unique_ptr<PendingRequest>>& batch, uint64_t rows,
                       int instance, Clock::TimePoint start) {
  for (const auto& p : batch) {
    const std::string& id = p->request->id;
    INFERD_VLOG_CTX(1, kComponent, LogField(ctx.model.name), LogField(id))
        << "scheduled: " << RequestLogName(ctx.model.name, ctx.model.version, id) << ": batch of "
        << batch.size() << " request(s), " << rows << " rows, instance " << Instance(instance)
        << ", " << Us(p->arrival, start) << " us in the queue";
  }
}

void LogBatchEndSlow(const BatchContext& ctx,
                     const std::vector<std::unique_ptr<PendingRequest>>& batch,
                     std::span<const ExecutionItem> items, uint64_t rows, int instance,
                     Clock::TimePoint start, Clock::TimePoint infer_start,
                     Clock::TimePoint infer_end, Clock::TimePoint output_end) {
  for (size_t i = 0; i < items.size(); ++i) {
    const ExecutionItem& item = items[i];
    // A taken-over item's request lives in its stream, which the item still
    // holds here (RunBatch lets it go after this).
    const std::string& id = item.request->id;
    std::string outcome;
    if (item.taken || (i < batch.size() && batch[i] == nullptr)) {
      outcome = "answered through its response stream";
    } else if (item.status.ok()) {
      outcome = "OK";
    } else {
      outcome = std::string("error ") + StatusCodeName(item.status.code()) + ": " +
                EscapeControl(item.status.message());
    }
    INFERD_VLOG_CTX(1, kComponent, LogField(ctx.model.name), LogField(id))
        << "executed: " << RequestLogName(ctx.model.name, ctx.model.version, id) << ": instance "
        << Instance(instance) << ", batch rows " << rows << ", compute " << Us(start, output_end)
        << " us (input " << Us(start, infer_start) << ", infer " << Us(infer_start, infer_end)
        << ", output " << Us(infer_end, output_end) << "): " << outcome;
  }
}

}  // namespace inferd
