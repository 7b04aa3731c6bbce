// The classification extension (docs: PROTOCOL.md §6): an output requested
// with `classification: k` is replaced by the k largest entries of the
// tensor as BYTES strings "<value>:<index>[:<label>]", computed by the core
// after the backend ran, from the labels of the output's label_filename.
//
// Pure functions of their arguments; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd {

// Reads the label file of every output that names one (label_filename,
// relative to `model_dir`, one label per line) into TensorSpec::labels.
// An error names the output and the file it could not read.
Status LoadClassificationLabels(ModelSpec& spec, const std::string& model_dir);

// The classification of `output`: the top `k` of each batch entry (the
// first dimension, when `batched` and the tensor has one) or of the whole
// tensor. INVALID_ARGUMENT for types without an order (BOOL, FP16, BF16,
// BYTES) and for entries of more than 1,000,000 elements.
StatusOr<InferOutput> Classify(const InferOutput& output, uint32_t k, bool batched,
                               const std::vector<std::string>& labels);

// Replaces each output of `response` that `request` asked to classify by its
// classification (batched when the model's max_batch_size > 0).
Status ApplyClassification(const ModelSpec& spec, const InferRequest& request,
                           InferResponse& response);

}  // namespace inferd
