// Model configuration: parsing config.pbtxt into inference::ModelConfig,
// Triton's normalisation defaults, the plain ModelSpec the core uses, and
// the JSON rendering served by the config endpoint.
//
// Includes the generated protobuf header: include this only from
// repository and front-end .cc files, never from widely included headers.
#pragma once

#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/status.h"
#include "model_config.pb.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

// Parses protobuf text format. Errors name `file` with line and column.
StatusOr<inference::ModelConfig> ParseModelConfigText(const std::string& text,
                                                      const std::string& file);

// Parses protobuf JSON (the load API's "config" parameter; field names as
// in the proto, enum names case-insensitive is not supported by protobuf so
// they must be exact).
StatusOr<inference::ModelConfig> ParseModelConfigJson(const std::string& json);

struct NormalizeOptions {
  int gpu_count = 0;  // GPUs present; 0 on CPU machines
};

// Applies the defaults Triton applies after loading (PROTOCOL.md §3.2,
// §3.4) and checks what the server relies on: the name matches the model
// directory, tensor names are unique and typed, kinds and counts are valid.
// Errors name the offending field.
Status NormalizeModelConfig(const std::string& model_name, const NormalizeOptions& options,
                            inference::ModelConfig& config);

// The core's view of a normalised config.
ModelSpec SpecFromConfig(const inference::ModelConfig& config);

// The scheduling settings of a normalised config.
SchedulerConfig SchedulerConfigFromConfig(const inference::ModelConfig& config);

// Triton's JSON rendering (PROTOCOL.md §1.7): proto field names, enum
// names, every primitive printed, selected int64 fields as bare numbers.
std::string ModelConfigToJson(const inference::ModelConfig& config);

}  // namespace inferd
