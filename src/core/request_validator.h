// Request validation: the single place where a decoded InferRequest is
// checked against its model. Front ends only parse; everything a request
// must satisfy to reach a backend is checked here.
#pragma once

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd {

// Checks input names (known, none duplicated, required ones present),
// datatypes, shapes (batch dimension, wildcards, non-negative), byte sizes
// (overflow-safe; BYTES prefixes walked), batch size against
// max_batch_size, and requested outputs (known, no duplicates). Sets
// request.batch_size. Errors are INVALID_ARGUMENT naming the tensor.
Status ValidateRequest(const ModelSpec& spec, InferRequest& request);

}  // namespace inferd
