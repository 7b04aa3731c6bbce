// Request validation: the single place where a decoded InferRequest is
// checked against its model. Front ends only parse; everything a request
// must satisfy to reach a backend is checked here.
#pragma once

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd {

// Per-request bounds that do not depend on the model (docs/security.md).
// They cap what a request may make a backend allocate: a model rarely has
// more than a few tensors, and each BYTES element usually becomes one
// string object in a backend.
struct RequestLimits {
  size_t max_inputs = 1024;               // --max-request-inputs
  size_t max_outputs = 1024;              // --max-request-outputs
  uint64_t max_bytes_elements = 1 << 24;  // --max-bytes-elements, per BYTES tensor
};

// First applies the reserved request parameters (ApplyReservedParameters).
// Checks input names (known, none duplicated, required ones present),
// datatypes, shapes (batch dimension, wildcards, non-negative), byte sizes
// (overflow-safe; BYTES prefixes walked), batch size against
// max_batch_size, and requested outputs (known, no duplicates). Sets
// request.batch_size. Counts over `limits` are INVALID_ARGUMENT naming the
// limit and its flag; they are checked first, before any per-tensor work.
// Errors are INVALID_ARGUMENT naming the tensor.
Status ValidateRequest(const ModelSpec& spec, InferRequest& request,
                       const RequestLimits& limits = {});

}  // namespace inferd
