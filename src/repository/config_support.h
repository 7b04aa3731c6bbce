// Which config.pbtxt fields inferd implements. Every field of
// model_config.proto is either honoured, refused at load (the reason names
// the field), or — when it only tunes performance — accepted with a
// warning. The table of refused and warned fields lives in
// config_support.cc; docs/backends.md lists it with what Triton does.
//
// Includes the generated config proto: include only from .cc files.
// Threading: pure functions over a config; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model_config.pb.h"

namespace inferd {

enum class ConfigSupport { kRefused, kWarned };

// One use of a field inferd does not implement.
struct ConfigFinding {
  ConfigSupport support = ConfigSupport::kRefused;
  std::string field;    // proto path, e.g. "instance_group.rate_limiter"
  std::string message;  // the sentence for the load-failure reason or the log
};

// Every refused or warned field the config uses, in table order.
std::vector<ConfigFinding> FindUnsupportedConfig(const inference::ModelConfig& config);

// The first refusal as INVALID_ARGUMENT (naming the field), after the
// structural checks of fields inferd honours (input `format`, implicit
// sequence state). Warnings are appended to `warnings` when given.
Status CheckConfigSupport(const inference::ModelConfig& config, std::vector<std::string>* warnings);

}  // namespace inferd
