// Verbose logging of a request's way through a model's scheduler
// (docs/logging.md, "Verbose levels"; the front ends' lines are
// core/request_log.h). At level 1, component "scheduler", each line with the
// request's model and id:
//   enqueue   "enqueued: model 'm' version v, id 'x'" (or ", answered from
//             the response cache")
//   schedule  "scheduled: model 'm' version v, id 'x': batch of n request(s),
//             r rows, instance i, q us in the queue"
//   execute   "executed: model 'm' version v, id 'x': instance i, batch rows r,
//             compute c us (input a, infer b, output d): OK" or ": error ..."
// The inline forms check the level (one relaxed atomic load) and evaluate
// nothing more when it is off.
//
// Threading: any thread; reads what the caller owns.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/log.h"
#include "scheduler/batch_runner.h"
#include "scheduler/clock.h"

namespace inferd {

void LogEnqueuedSlow(std::string_view model, int64_t version, std::string_view id, bool cached);
void LogBatchStartSlow(const BatchContext& ctx,
                       const std::vector<std::unique_ptr<PendingRequest>>& batch, uint64_t rows,
                       int instance, Clock::TimePoint start);
// `batch[i]` is null for an item whose answer a stream took over.
void LogBatchEndSlow(const BatchContext& ctx,
                     const std::vector<std::unique_ptr<PendingRequest>>& batch,
                     std::span<const ExecutionItem> items, uint64_t rows, int instance,
                     Clock::TimePoint start, Clock::TimePoint infer_start,
                     Clock::TimePoint infer_end, Clock::TimePoint output_end);

// A request handed to `model` version `version`'s scheduler.
inline void LogEnqueued(std::string_view model, int64_t version, const InferRequest& request) {
  if (LogEnabled(LogLevel::kVerbose, 1)) LogEnqueuedSlow(model, version, request.id, false);
}

// A request (of id `id`) answered from the model's response cache.
inline void LogCacheAnswer(std::string_view model, int64_t version, std::string_view id) {
  if (LogEnabled(LogLevel::kVerbose, 1)) LogEnqueuedSlow(model, version, id, true);
}

// A batch about to run on instance `instance` (-1: not known), with
// `rows` rows in all; each request's queue time ends at `start`.
inline void LogBatchStart(const BatchContext& ctx,
                          const std::vector<std::unique_ptr<PendingRequest>>& batch, uint64_t rows,
                          int instance, Clock::TimePoint start) {
  if (LogEnabled(LogLevel::kVerbose, 1)) LogBatchStartSlow(ctx, batch, rows, instance, start);
}

// The batch ran: each request's compute time and outcome.
inline void LogBatchEnd(const BatchContext& ctx,
                        const std::vector<std::unique_ptr<PendingRequest>>& batch,
                        std::span<const ExecutionItem> items, uint64_t rows, int instance,
                        Clock::TimePoint start, Clock::TimePoint infer_start,
                        Clock::TimePoint infer_end, Clock::TimePoint output_end) {
  if (LogEnabled(LogLevel::kVerbose, 1)) {
    LogBatchEndSlow(ctx, batch, items, rows, instance, start, infer_start, infer_end, output_end);
  }
}

}  // namespace inferd
