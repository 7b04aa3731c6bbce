// Runs one batch of pending requests on a backend instance and completes
// each request with its own response or error. Called on an instance thread.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "scheduler/scheduler.h"

namespace inferd {

struct ModelIdentity {
  std::string name;
  int64_t version = 0;
};

void RunBatch(const ModelIdentity& model, BackendInstance& instance,
              std::vector<std::unique_ptr<PendingRequest>>& batch);

}  // namespace inferd
