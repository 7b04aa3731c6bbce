// Reading a model's configuration for a load: from the source's
// config.pbtxt or from the caller's JSON override, parsed, normalised
// (Triton's defaults, the server's checks) and put against the versions the
// source lists through the version policy. The step between planning which
// models to load (PlanModels) and which versions (PlanVersions).
//
// Includes the generated config proto: include only from .cc files.
// Threading: no state; safe from any thread (the source's own contract).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "repository/lifecycle_plan.h"
#include "repository/model_config_util.h"
#include "repository/python_auto_complete.h"
#include "repository/repository_source.h"

namespace inferd {

struct PreparedConfig {
  inference::ModelConfig config;      // normalised; meaningful when `plan.error` is empty
  PreparedModel plan;                 // the error, or the versions the policy wants
  std::vector<std::string> warnings;  // accepted fields without effect (config_support.h)
};

// Errors land in `plan.error`, worded for the index and the load answer:
// "model 'x' has no config.pbtxt", the parser's message (file, line,
// column) — these two with `plan.unreadable` set —,
// "x/config.pbtxt: <normalisation error>", or why the versions could not be
// listed. Python models' auto_complete_config runs before normalisation
// (`python`, python_auto_complete.h).
PreparedConfig PrepareModel(const RepositorySource& source, const std::string& name,
                            const std::optional<std::string>& config_json,
                            const NormalizeOptions& options,
                            const PythonAutoCompleteOptions& python = {});

}  // namespace inferd
