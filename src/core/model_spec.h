// ModelSpec: the plain-struct view of a model's configuration that the core
// needs to validate and route requests. Built from the config proto by the
// repository; the proto itself stays out of core headers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/datatype.h"
#include "core/shape.h"

namespace inferd {

struct TensorSpec {
  std::string name;
  DataType datatype = DataType::kInvalid;
  Shape dims;  // without the batch dimension; -1 = any size
  bool optional = false;
  bool has_reshape = false;
  Shape reshape;
  std::string label_filename;
  std::vector<std::string> labels;  // lines of label_filename, read at load
};

// Sequence control inputs the server delivers to a stateful model.
enum class ControlKind { kStart, kReady, kEnd, kCorrelationId };

struct ControlInputSpec {
  std::string name;
  ControlKind kind = ControlKind::kStart;
  DataType datatype = DataType::kInvalid;
};

struct ModelSpec {
  std::string name;
  std::string platform;
  std::string backend;
  int64_t max_batch_size = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::map<std::string, std::string> parameters;  // config `parameters` string values
  int instance_count = 1;                         // total instances across groups
  bool decoupled = false;
  std::vector<ControlInputSpec> sequence_controls;  // sequence batching only

  const TensorSpec* FindInput(std::string_view n) const {
    for (const auto& t : inputs)
      if (t.name == n) return &t;
    return nullptr;
  }
  const TensorSpec* FindOutput(std::string_view n) const {
    for (const auto& t : outputs)
      if (t.name == n) return &t;
    return nullptr;
  }
};

}  // namespace inferd
