// The internal backend interface: what the core calls to load a model and
// run batches on its instances. Every backend, built-in or shared library,
// is a plugin behind the C ABI of include/inferd/backend.h; the adapter in
// backend/plugin_backend.h turns it into this interface.
//
// Lifecycle: Backend::LoadModel -> BackendModel::CreateInstance (once per
// instance) -> BackendInstance::Execute (many times) -> destruction in the
// reverse order.
//
// Threading: an instance's Execute is only ever called from that instance's
// own thread and never concurrently with itself. Different instances of one
// model run at the same time, so BackendModel must be safe to share between
// them once loaded.
//
// Errors: load/create failures return a Status naming the problem; a failure
// of one request inside a batch goes in that item's status and the other
// items still succeed. Implementations must not throw.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd {

struct ModelLoadContext {
  const ModelSpec* spec = nullptr;
  std::string model_dir;    // <repository>/<model>
  std::string version_dir;  // <repository>/<model>/<version>
  int64_t version = 0;
  std::string default_model_filename;  // config value, "" if none
  std::string config_json;             // the normalised config as JSON
};

enum class InstanceKind { kCpu, kGpu, kModel };

struct InstanceInfo {
  std::string name;  // e.g. "simple_0_1"
  InstanceKind kind = InstanceKind::kCpu;
  int device_id = 0;
};

// One request of a batch. The backend reads `request` and writes its
// outputs into `response` (AddOutput) or sets `status`.
struct ExecutionItem {
  const InferRequest* request = nullptr;
  InferResponse* response = nullptr;
  Status status;
};

class BackendInstance {
 public:
  virtual ~BackendInstance() = default;
  virtual void Execute(std::span<ExecutionItem> batch) = 0;
};

class BackendModel {
 public:
  virtual ~BackendModel() = default;
  virtual StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo& info) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) = 0;
};

}  // namespace inferd
