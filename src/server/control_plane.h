// ControlPlane: the control calls of every front end, written once. The
// model-name rule, repository index/load/unload (load and unload on one
// owned worker thread) and client shared memory (the --allow-client-shm
// gate, registration, status) answer the same Status whichever protocol
// asked; front ends only decode their wire into these calls and encode the
// answer back (HTTP through HttpStatusFromCode, gRPC by code value).
//
// Ownership: owned by InferenceServer (InferenceServer::control()), whose
// model manager and shared-memory managers it drives; it must not outlive
// the server.
//
// Threading: every method may be called from any thread. Nothing here
// blocks on loading or on a device: Load, Unload and RegisterCudaShm return
// at once and call `done` exactly once, on the worker thread (a delayed
// unload, --model-unload-delay-secs: on the model manager's delayer thread
// when the delay is over, the worker meanwhile free for other calls, so
// that a load can cancel the unload), or on the
// calling thread before they return when the call is refused up front
// (named repository, bad model name, bad parameter, client shared memory
// disabled) or the server is shutting down. `done` must not block. Stop()
// (InferenceServer::Stop) lets the running call finish, answers the queued
// ones UNAVAILABLE "server is shutting down", and joins the worker.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/parameters.h"
#include "core/status.h"
#include "repository/model_manager.h"
#include "server/serial_worker.h"
#include "shm/cuda_shm_manager.h"
#include "shm/shm_manager.h"

namespace inferd {

class InferenceServer;

class ControlPlane {
 public:
  using Done = std::function<void(Status)>;

  explicit ControlPlane(InferenceServer& server) : server_(server) {}
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The one model-name rule, for every model-addressed call of both
  // protocols (metadata, ready, config, infer, statistics, load, unload):
  // a name that could not be a model directory (over 255 bytes, '/', '\',
  // "..", control characters) is INVALID_ARGUMENT "invalid model name
  // '<name>': ...". The empty name passes: it names no model, so lookups
  // answer NOT_FOUND (as Triton), and gRPC statistics read it as "every
  // model"; loading it fails in the model manager.
  static Status CheckModelName(std::string_view name);

  // ---- repository extension ----
  // A non-empty `repository` is UNIMPLEMENTED "'repository_name'
  // specification is not supported" (one repository namespace).
  StatusOr<std::vector<ModelIndexEntry>> RepositoryIndex(std::string_view repository,
                                                         bool ready_only) const;
  // Load parameters: "config" (a string, the model configuration as JSON)
  // and Triton's model files "file:<version>/<path>" (strings holding each
  // file's bytes: the front end decodes its wire encoding, base64 or
  // bytes_param). Files need "config" (INVALID_ARGUMENT "Load parameter
  // 'config' must be specified for model file override") and are checked
  // as a whole with CheckModelFiles before the call is queued, so bad paths
  // write nothing. Their total size is bounded by the request that carried
  // them (--http-max-input-size, --grpc-max-message-size).
  // Unload parameters: "unload_dependents" (a bool, accepted and ignored).
  // Any other key is INVALID_ARGUMENT "unrecognized load parameter '<k>'",
  // a mistyped one "load parameter 'config' must be a string, got ...".
  // Checked in this order: repository, name, parameters; then the call is
  // queued and InferenceServer::LoadModel / UnloadModel run on the worker.
  // Unload answers when the model is unloaded: with an unload delay, after
  // it (ABORTED if a load of the model cancelled the unload meanwhile).
  // Load failures are ModelManager::Load's (Triton's words and codes).
  void Load(std::string_view repository, const std::string& name, Parameters parameters, Done done);
  void Unload(std::string_view repository, const std::string& name, const Parameters& parameters,
              Done done);

  // ---- client shared memory ----
  // OK when clients may register regions (--allow-client-shm); otherwise
  // UNIMPLEMENTED "Client shared memory is disabled. ...". Register and
  // unregister check it first; status is always allowed.
  Status CheckClientShm() const;
  // Regions by name, or all for "". An unknown name is NOT_FOUND.
  StatusOr<std::vector<RegionStatus>> SystemShmStatus(const std::string& name) const;
  StatusOr<std::vector<CudaRegionStatus>> CudaShmStatus(const std::string& name) const;
  // An empty `name` is INVALID_ARGUMENT "'region name' is necessary to
  // register ... shared memory region"; the managers' errors otherwise.
  Status RegisterSystemShm(const std::string& name, const std::string& key, uint64_t offset,
                           uint64_t byte_size);
  // Opens the IPC handle on the worker (it maps device memory). Names are
  // one namespace with system regions (ALREADY_EXISTS); `device_id` outside
  // [0, INT32_MAX] is INVALID_ARGUMENT; a server without a GPU answers
  // INVALID_ARGUMENT "..., GPUs not supported (<why>)", as Triton.
  void RegisterCudaShm(const std::string& name, std::string raw_handle, int64_t device_id,
                       uint64_t byte_size, Done done);
  // "" unregisters every region of the kind; a name that is not a region
  // of the kind is nothing to do (OK, as Triton).
  Status UnregisterSystemShm(const std::string& name);
  Status UnregisterCudaShm(const std::string& name);

  // See the header comment. Idempotent.
  void Stop() { worker_.Stop(); }

 private:
  Status RegisterCudaNow(const std::string& name, const std::string& raw_handle, int64_t device_id,
                         uint64_t byte_size);

  InferenceServer& server_;
  SerialWorker worker_;
};

}  // namespace inferd
