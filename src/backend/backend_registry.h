// BackendRegistry: maps a config's `backend`/`platform` to a Backend.
// Filled once at start-up, then read-only (safe to read from any thread).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/model_spec.h"

namespace inferd {

class BackendRegistry {
 public:
  // Registers the built-in test backends (identity, add_sub).
  static std::unique_ptr<BackendRegistry> WithBuiltins();

  void Register(const std::string& name, std::shared_ptr<Backend> backend);

  // The backend for a model: its `backend` field, else its platform.
  StatusOr<std::shared_ptr<Backend>> Find(const ModelSpec& spec) const;

 private:
  std::map<std::string, std::shared_ptr<Backend>> backends_;
};

}  // namespace inferd
