// auto_complete_config of Python models (Triton's TritonPythonModel.
// auto_complete_config(auto_complete_model_config)), run before the config is
// normalised: for a `backend: "python"` model whose model.py defines the
// hook, a throw-away stub (the Python backend's inferd_python_stub.py in
// "autocomplete" mode, on /usr/bin/python3) gets the config as Triton's
// JSON and returns the completed one; the merge rules are those of
// triton_python_backend_utils.ModelConfig (it raises on conflicts).
//
// The stub sees the model's model.py alone (copied from the repository
// source into a temporary directory, so remote repositories work the same):
// a hook that imports sibling files of model.py at import time fails with
// its ImportError as the load error.
// Threading: no shared state; blocks the caller for up to `timeout`.
#pragma once

#include <chrono>
#include <string>

#include "core/status.h"
#include "model_config.pb.h"
#include "repository/repository_source.h"

namespace inferd {

struct PythonAutoCompleteOptions {
  bool enabled = true;         // --disable-auto-complete-config turns it off
  std::string stub_directory;  // <backend dir>/python; "" = no auto-complete
  std::chrono::seconds timeout{60};
};

// Completes `config` in place; a model that is not Python, has no hook or
// no model file is left alone (the backend reports a missing file). Errors
// (the hook raised, returned something else, timed out) are INVALID_ARGUMENT
// with the reason.
Status PythonAutoComplete(const RepositorySource& source, const std::string& name,
                          const PythonAutoCompleteOptions& options, inference::ModelConfig& config);

}  // namespace inferd
