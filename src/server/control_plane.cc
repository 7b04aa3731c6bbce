#include "server/control_plane.h"

#include <climits>
#include <optional>

#include "core/reserved_parameters.h"
#include "core/sanitize.h"
#include "repository/model_files.h"
#include "repository/repository_scan.h"
#include "server/inference_server.h"

namespace inferd {
namespace {

Status CheckRepository(std::string_view repository) {
  if (repository.empty()) return Status::Ok();
  return Unimplemented("'repository_name' specification is not supported");
}

// Triton's repository parameters. Load: "config", and the model files
// "file:<version>/<path>" (their contents, already decoded by the front
// end), which need "config" and are checked as a whole before anything is
// written.
Status CheckLoadParameters(Parameters& parameters, std::optional<std::string>* config,
                           ModelFiles* files) {
  const std::string what = "load parameter";
  for (auto& [key, value] : parameters) {
    std::string* s = std::get_if<std::string>(&value);
    if (key == "config") {
      if (s == nullptr) return ParameterTypeError(what, key, "a string", value);
      *config = *s;
    } else if (key.starts_with(kModelFilePrefix)) {
      if (s == nullptr) return ParameterTypeError(what, key, "the file's content", value);
      files->emplace(key.substr(kModelFilePrefix.size()), std::move(*s));
    } else {
      return InvalidArgument("unrecognized " + what + " '" + Bounded(key) + "'");
    }
  }
  if (files->empty()) return Status::Ok();
  if (!config->has_value()) {
    return InvalidArgument("Load parameter 'config' must be specified for model file override");
  }
  return CheckModelFiles(*files);
}

Status CheckUnloadParameters(const Parameters& parameters) {
  const std::string what = "unload parameter";
  for (const auto& [key, value] : parameters) {
    if (key == "unload_dependents") {
      if (!std::holds_alternative<bool>(value)) {
        return ParameterTypeError(what, key, "a bool", value);
      }
    } else {
      return InvalidArgument("unrecognized " + what + " '" + Bounded(key) + "'");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ControlPlane::CheckModelName(std::string_view name) {
  // "" names no model: the lookup answers NOT_FOUND, as Triton does.
  if (name.empty() || IsValidModelName(name)) return Status::Ok();
  return InvalidArgument("invalid model name '" + Bounded(name) +
                         "': a model name is 1 to 255 bytes without '/', '\\', '..' or control "
                         "characters");
}

StatusOr<std::vector<ModelIndexEntry>> ControlPlane::RepositoryIndex(std::string_view repository,
                                                                     bool ready_only) const {
  INFERD_RETURN_IF_ERROR(CheckRepository(repository));
  return server_.RepositoryIndex(ready_only);
}

void ControlPlane::Load(std::string_view repository, const std::string& name, Parameters parameters,
                        Done done) {
  std::optional<std::string> config;
  ModelFiles files;
  Status s = CheckRepository(repository);
  if (s.ok()) s = CheckModelName(name);
  if (s.ok()) s = CheckLoadParameters(parameters, &config, &files);
  if (!s.ok()) return done(s);
  worker_.Post([this, name, config = std::move(config),
                files = std::move(files)] { return server_.LoadModel(name, config, files); },
               std::move(done));
}

void ControlPlane::Unload(std::string_view repository, const std::string& name,
                          const Parameters& parameters, Done done) {
  Status s = CheckRepository(repository);
  if (s.ok()) s = CheckModelName(name);
  if (s.ok()) s = CheckUnloadParameters(parameters);
  if (!s.ok()) return done(s);
  worker_.PostAsync([this, name](Done unloaded) { server_.UnloadModel(name, std::move(unloaded)); },
                    std::move(done));
}

Status ControlPlane::CheckClientShm() const {
  if (server_.allow_client_shm()) return Status::Ok();
  return Unimplemented(
      "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to "
      "enable.");
}

StatusOr<std::vector<RegionStatus>> ControlPlane::SystemShmStatus(const std::string& name) const {
  return server_.shared_memory().GetStatus(name);
}

StatusOr<std::vector<CudaRegionStatus>> ControlPlane::CudaShmStatus(const std::string& name) const {
  return server_.cuda_shared_memory().GetStatus(name);
}

Status ControlPlane::RegisterSystemShm(const std::string& name, const std::string& key,
                                       uint64_t offset, uint64_t byte_size) {
  INFERD_RETURN_IF_ERROR(CheckClientShm());
  if (name.empty()) {
    return InvalidArgument("'region name' is necessary to register system shared memory region");
  }
  return server_.shared_memory().Register(name, key, offset, byte_size);
}

void ControlPlane::RegisterCudaShm(const std::string& name, std::string raw_handle,
                                   int64_t device_id, uint64_t byte_size, Done done) {
  Status s = CheckClientShm();
  if (s.ok() && name.empty()) {
    s = InvalidArgument("'region name' is necessary to register CUDA shared memory region");
  }
  if (s.ok() && (device_id < 0 || device_id > INT32_MAX)) {
    s = InvalidArgument("'device_id' " + std::to_string(device_id) + " is out of range");
  }
  if (!s.ok()) return done(s);
  worker_.Post([this, name, handle = std::move(raw_handle), device_id,
                byte_size] { return RegisterCudaNow(name, handle, device_id, byte_size); },
               std::move(done));
}

Status ControlPlane::RegisterCudaNow(const std::string& name, const std::string& raw_handle,
                                     int64_t device_id, uint64_t byte_size) {
  if (server_.shared_memory().Find(name).ok() || server_.cuda_shared_memory().Find(name).ok()) {
    return AlreadyExists("shared memory region '" + name + "' already in manager");
  }
  // Triton's code for a server without GPUs is INVALID_ARGUMENT (400): the
  // request cannot succeed here, whatever the handle.
  if (server_.cuda_shared_memory().DeviceCount() == 0) {
    return InvalidArgument("failed to register CUDA shared memory region: '" + name +
                           "', GPUs not supported (" + server_.device_memory().Unavailable() + ")");
  }
  return server_.cuda_shared_memory().Register(name, raw_handle, device_id, byte_size);
}

Status ControlPlane::UnregisterSystemShm(const std::string& name) {
  INFERD_RETURN_IF_ERROR(CheckClientShm());
  return server_.shared_memory().Unregister(name);
}

Status ControlPlane::UnregisterCudaShm(const std::string& name) {
  INFERD_RETURN_IF_ERROR(CheckClientShm());
  return server_.cuda_shared_memory().Unregister(name);
}

}  // namespace inferd
