// Shared by the libFuzzer targets (fuzz/*_fuzz.cc): a fixed model spec that
// decoded requests are validated against, so the fuzzers reach the core's
// validator as real requests do.
#pragma once

#include "core/model_spec.h"

namespace inferd::fuzz {

// Two FP32 inputs and a BYTES input, batching up to 8; outputs alike.
inline ModelSpec TestSpec() {
  ModelSpec spec;
  spec.name = "m";
  spec.max_batch_size = 8;
  auto tensor = [](const char* name, DataType t, Shape dims) {
    TensorSpec ts;
    ts.name = name;
    ts.datatype = t;
    ts.dims = std::move(dims);
    return ts;
  };
  spec.inputs = {tensor("INPUT0", DataType::kFp32, {-1}), tensor("INPUT1", DataType::kFp32, {4}),
                 tensor("TEXT", DataType::kBytes, {-1})};
  spec.inputs[2].optional = true;
  spec.outputs = {tensor("OUTPUT0", DataType::kFp32, {-1}),
                  tensor("OUTPUT1", DataType::kFp32, {4})};
  return spec;
}

}  // namespace inferd::fuzz
