// BackendRegistry: maps a config's `backend`/`platform` to a Backend.
//
// Built-in backends (add_sub, delay, accumulator) are registered at start;
// any other backend is the shared library libinferd_<name>.so in the
// backend directory, loaded the first time a model needs it and kept from
// then on. `backend:` names the backend; without it the platform decides
// (pytorch_libtorch -> pytorch, onnxruntime_onnx -> onnx), and Triton's
// backend name `onnxruntime` means `onnx`.
//
// Thread-safety: every method may be called from any thread (models load in
// parallel); a library is loaded at most once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/backend.h"
#include "core/model_spec.h"
#include "inferd/backend.h"

namespace inferd {

class BackendRegistry {
 public:
  // A registry that loads shared-library backends from `backend_directory`
  // ("" = DefaultBackendDirectory()) and has no built-in backends.
  explicit BackendRegistry(std::string backend_directory = "");

  // The built-in backends, plus shared libraries from `backend_directory`.
  // Call before starting threads: it sets GOMP_SPINCOUNT=10000 in the
  // environment when neither it nor OMP_WAIT_POLICY is set (docs/backends.md,
  // "OpenMP waiting").
  static std::unique_ptr<BackendRegistry> WithBuiltins(std::string backend_directory = "");

  // <directory of the executable>/../lib/inferd/backends: where the build
  // tree and an installed tree (`cmake --install`) both keep the backends.
  // Nothing about the build machine is compiled in.
  static std::string DefaultBackendDirectory();

  const std::string& backend_directory() const { return directory_; }

  void Register(const std::string& name, std::shared_ptr<Backend> backend);
  // Registers a plugin compiled into the server: its table goes through the
  // same checks as a library's.
  Status RegisterBuiltin(const std::string& name, InferdBackendEntryFn entry);

  // The backend a model needs: `backend`, else derived from its platform.
  // Empty if it names neither.
  static std::string BackendName(const ModelSpec& spec);

  // The backend for a model, loading its library if needed. An error names
  // the backend, the file looked for and why it could not be used.
  StatusOr<std::shared_ptr<Backend>> Find(const ModelSpec& spec) const;

 private:
  const std::string directory_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<Backend>> backends_;  // guarded by mu_
};

}  // namespace inferd
