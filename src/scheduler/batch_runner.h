// Runs one batch of pending requests on a backend instance and gives each
// request's sink its own final signal (the response, sent as final, or the
// error), recording statistics. Called on an instance thread (or a caller's
// thread lent an instance: inline execution).
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "core/model_spec.h"
#include "scheduler/clock.h"
#include "scheduler/model_stats.h"
#include "scheduler/scheduler.h"

namespace inferd {

struct ModelIdentity {
  std::string name;
  int64_t version = 0;
  const ModelSpec* spec = nullptr;  // for the classification extension; may be null
};

struct BatchContext {
  ModelIdentity model;
  ModelStats* stats = nullptr;  // may be null
  Clock* clock = nullptr;
};

// Executes `batch` (cleared on return, which destroys the sinks). Requests
// cancelled while queued should have been removed before; a request that
// fails inside the backend fails alone. `cpu_threads`: the backend's CPU
// thread hint for this execution (ExecutionItem::cpu_threads; 0: none).
// `instance_index`: the instance's place in its model, for the verbose log
// (-1: none).
void RunBatch(const BatchContext& ctx, BackendInstance& instance,
              std::vector<std::unique_ptr<PendingRequest>>& batch, int cpu_threads = 0,
              int instance_index = -1);

// Finishes the sink of a request that never reached a backend (rejected,
// timed out, cancelled) with `status`, and records it.
void FailPending(const BatchContext& ctx, PendingRequest& pending, FailReason reason,
                 const Status& status);

}  // namespace inferd
