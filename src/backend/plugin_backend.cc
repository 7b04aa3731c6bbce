#include "backend/plugin_backend.h"

#include <dlfcn.h>

#include <cstring>
#include <vector>

#include "backend/plugin_host.h"

namespace inferd {

// The C enums are the core's enums, value for value.
static_assert(INFERD_TYPE_BF16 == static_cast<int>(DataType::kBf16) &&
              INFERD_TYPE_BYTES == static_cast<int>(DataType::kBytes) &&
              INFERD_TYPE_FP32 == static_cast<int>(DataType::kFp32));
static_assert(INFERD_ERROR_UNAVAILABLE == static_cast<int>(StatusCode::kUnavailable) &&
              INFERD_ERROR_INVALID_ARGUMENT == static_cast<int>(StatusCode::kInvalidArgument));
static_assert(INFERD_MEMORY_GPU == static_cast<int>(MemoryType::kGpu));

namespace {

using plugin_host::ErrorNew;

Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}

// ---- the adapter ------------------------------------------------------------

InferdError* Escaped(const char* where) {
  return ErrorNew(INFERD_ERROR_INTERNAL,
                  (std::string("backend let an exception escape from ") + where).c_str());
}

// One initialized plugin: its table and its backend state.
class Plugin {
 public:
  Plugin(std::string name, const InferdBackendApi* api, void* state)
      : name_(std::move(name)), api_(api), state_(state) {}
  ~Plugin() {
    try {
      api_->finalize(state_);
    } catch (...) {
    }
  }
  const std::string& name() const { return name_; }
  const InferdBackendApi* api() const { return api_; }
  void* state() const { return state_; }

 private:
  std::string name_;
  const InferdBackendApi* api_;
  void* state_;
};

// A loaded model: the C description the plugin reads (and the storage its
// pointers point into) and the plugin's model state. Shared by the
// BackendModel and its instances, so model_finalize runs after the last
// instance_finalize whatever order the owners go away in.
class ModelHandle {
 public:
  ModelHandle(std::shared_ptr<Plugin> plugin, const ModelLoadContext& ctx)
      : plugin_(std::move(plugin)),
        spec_(*ctx.spec),
        model_dir_(ctx.model_dir),
        version_dir_(ctx.version_dir),
        default_filename_(ctx.default_model_filename),
        config_json_(ctx.config_json),
        host_model_{ctx.health} {
    auto tensors = [](const std::vector<TensorSpec>& from, std::vector<InferdTensorSpec>& to) {
      for (const auto& t : from) {
        to.push_back(InferdTensorSpec{t.name.c_str(), static_cast<InferdDataType>(t.datatype),
                                      static_cast<uint32_t>(t.dims.size()), t.dims.data(),
                                      t.optional ? 1 : 0});
      }
    };
    tensors(spec_.inputs, inputs_);
    tensors(spec_.outputs, outputs_);
    for (const auto& [k, v] : spec_.parameters) params_.push_back({k.c_str(), v.c_str()});
    for (const auto& c : spec_.sequence_controls) {
      InferdControlKind kind = INFERD_CONTROL_START;
      switch (c.kind) {
        case ControlKind::kStart:
          kind = INFERD_CONTROL_START;
          break;
        case ControlKind::kReady:
          kind = INFERD_CONTROL_READY;
          break;
        case ControlKind::kEnd:
          kind = INFERD_CONTROL_END;
          break;
        case ControlKind::kCorrelationId:
          kind = INFERD_CONTROL_CORRID;
          break;
      }
      controls_.push_back({c.name.c_str(), kind, static_cast<InferdDataType>(c.datatype)});
    }
    info_.name = spec_.name.c_str();
    info_.version = ctx.version;
    info_.model_directory = model_dir_.c_str();
    info_.version_directory = version_dir_.c_str();
    info_.default_model_filename = default_filename_.c_str();
    info_.platform = spec_.platform.c_str();
    info_.config_json = config_json_.c_str();
    info_.max_batch_size = spec_.max_batch_size;
    info_.instance_count = static_cast<uint32_t>(std::max(0, spec_.instance_count));
    info_.input_count = static_cast<uint32_t>(inputs_.size());
    info_.inputs = inputs_.data();
    info_.output_count = static_cast<uint32_t>(outputs_.size());
    info_.outputs = outputs_.data();
    info_.parameter_count = static_cast<uint32_t>(params_.size());
    info_.parameters = params_.data();
    info_.control_count = static_cast<uint32_t>(controls_.size());
    info_.controls = controls_.data();
    info_.decoupled = spec_.decoupled ? 1 : 0;
    info_.host_model = &host_model_;
  }

  ~ModelHandle() {
    if (!initialized_) return;
    try {
      plugin_->api()->model_finalize(state_);
    } catch (...) {
    }
  }

  Status Initialize() {
    InferdError* err = nullptr;
    try {
      err = plugin_->api()->model_initialize(plugin_->state(), &info_, &state_);
    } catch (...) {
      err = Escaped("model_initialize");
    }
    if (err != nullptr) return StatusFromPluginError(err);
    initialized_ = true;
    return Status::Ok();
  }

  const Plugin& plugin() const { return *plugin_; }
  void* state() const { return state_; }
  const std::vector<TensorSpec>& outputs() const { return spec_.outputs; }

 private:
  std::shared_ptr<Plugin> plugin_;
  ModelSpec spec_;
  std::string model_dir_, version_dir_, default_filename_, config_json_;
  std::vector<InferdTensorSpec> inputs_, outputs_;
  std::vector<InferdParameter> params_;
  std::vector<InferdControlInput> controls_;
  InferdHostModel host_model_;
  InferdModelInfo info_{};
  void* state_ = nullptr;
  bool initialized_ = false;
};

class PluginInstance : public BackendInstance {
 public:
  PluginInstance(std::shared_ptr<ModelHandle> model, void* state)
      : model_(std::move(model)), state_(state) {}
  ~PluginInstance() override {
    try {
      model_->plugin().api()->instance_finalize(state_);
    } catch (...) {
    }
  }

  void Execute(std::span<ExecutionItem> batch) override {
    if (batch.empty()) return;
    requests_.clear();
    pointers_.clear();
    for (auto& item : batch)
      requests_.push_back(InferdRequest{&item, &model_->outputs(), {}, false});
    for (auto& r : requests_) pointers_.push_back(&r);
    InferdError* err = nullptr;
    try {
      err = model_->plugin().api()->instance_execute(state_, pointers_.data(),
                                                     static_cast<uint32_t>(pointers_.size()));
    } catch (...) {
      err = Escaped("instance_execute");
    }
    if (err == nullptr) return;
    const Status s = StatusFromPluginError(err);
    for (auto& item : batch) {
      if (!item.status.ok()) continue;
      item.status = s;
      item.response->outputs.clear();
    }
  }

 private:
  std::shared_ptr<ModelHandle> model_;
  void* state_;
  std::vector<InferdRequest> requests_;  // reused across batches (one thread per instance)
  std::vector<InferdRequest*> pointers_;
};

class PluginModel : public BackendModel {
 public:
  explicit PluginModel(std::shared_ptr<ModelHandle> model) : model_(std::move(model)) {}

  StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo& info) override {
    InferdInstanceInfo c{};
    c.name = info.name.c_str();
    c.kind = info.kind == InstanceKind::kGpu     ? INFERD_INSTANCE_GPU
             : info.kind == InstanceKind::kModel ? INFERD_INSTANCE_MODEL
                                                 : INFERD_INSTANCE_CPU;
    c.device_id = info.device_id;
    void* state = nullptr;
    InferdError* err = nullptr;
    try {
      err = model_->plugin().api()->instance_initialize(model_->state(), &c, &state);
    } catch (...) {
      err = Escaped("instance_initialize");
    }
    if (err != nullptr) return StatusFromPluginError(err);
    return std::unique_ptr<BackendInstance>(new PluginInstance(model_, state));
  }

 private:
  std::shared_ptr<ModelHandle> model_;
};

class PluginBackend : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Plugin> plugin) : plugin_(std::move(plugin)) {}

  bool HonoursCpuThreadHint() const override {
    // `capabilities` exists only in tables of version 3 and later.
    const InferdBackendApi* api = plugin_->api();
    return api->abi_version >= 3 && (api->capabilities & INFERD_BACKEND_CAP_CPU_THREAD_HINT) != 0;
  }

  StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) override {
    auto model = std::make_shared<ModelHandle>(plugin_, ctx);
    Status s = model->Initialize();
    if (!s.ok()) return s;
    return std::unique_ptr<BackendModel>(new PluginModel(std::move(model)));
  }

 private:
  std::shared_ptr<Plugin> plugin_;
};

Status CheckTable(const InferdBackendApi* api) {
  // Versions 2 and 3 only appended to the tables: an older backend reads the
  // same host table and never looks past the fields it knows.
  if (api->abi_version < INFERD_BACKEND_ABI_MIN_VERSION ||
      api->abi_version > INFERD_BACKEND_ABI_VERSION) {
    return FailedPrecondition(
        "it was built for backend ABI version " + std::to_string(api->abi_version) +
        ", this server speaks versions " + std::to_string(INFERD_BACKEND_ABI_MIN_VERSION) + " to " +
        std::to_string(INFERD_BACKEND_ABI_VERSION) +
        " (rebuild the backend against this server's include/inferd/backend.h)");
  }
  const std::pair<const void*, const char*> fns[] = {
      {reinterpret_cast<const void*>(api->initialize), "initialize"},
      {reinterpret_cast<const void*>(api->finalize), "finalize"},
      {reinterpret_cast<const void*>(api->model_initialize), "model_initialize"},
      {reinterpret_cast<const void*>(api->model_finalize), "model_finalize"},
      {reinterpret_cast<const void*>(api->instance_initialize), "instance_initialize"},
      {reinterpret_cast<const void*>(api->instance_finalize), "instance_finalize"},
      {reinterpret_cast<const void*>(api->instance_execute), "instance_execute"},
  };
  for (const auto& [fn, what] : fns) {
    if (fn == nullptr) return FailedPrecondition(std::string("its table has no '") + what + "'");
  }
  return Status::Ok();
}

}  // namespace

Status StatusFromPluginError(InferdError* error) {
  if (error == nullptr) return Status::Ok();
  InferdErrorCode code = error->code;
  if (code <= 0 || code > INFERD_ERROR_UNAVAILABLE) code = INFERD_ERROR_UNKNOWN;
  Status s(static_cast<StatusCode>(code), std::move(error->message));
  delete error;
  if (s.message().empty()) s = Status(s.code(), "backend error without a message");
  return s;
}

namespace {

// The entry point's table, checked; nothing of the plugin has run but the
// entry function.
StatusOr<const InferdBackendApi*> CheckedTable(const std::string& who, InferdBackendEntryFn entry) {
  const InferdBackendApi* api = nullptr;
  try {
    api = entry(INFERD_BACKEND_ABI_VERSION);
  } catch (...) {
  }
  if (api == nullptr) {
    return FailedPrecondition(who + " does not support backend ABI version " +
                              std::to_string(INFERD_BACKEND_ABI_VERSION) +
                              " (its entry point returned no table)");
  }
  if (Status s = CheckTable(api); !s.ok()) return s.WithPrefix(who + " is refused");
  return api;
}

StatusOr<std::shared_ptr<Backend>> Initialize(const std::string& name, const std::string& who,
                                              const InferdBackendApi* api) {
  void* state = nullptr;
  InferdError* err = nullptr;
  try {
    err = api->initialize(HostApi(), &state);
  } catch (...) {
    err = Escaped("initialize");
  }
  if (err != nullptr) return StatusFromPluginError(err).WithPrefix(who + " failed to initialize");
  auto plugin = std::make_shared<Plugin>(name, api, state);
  return std::shared_ptr<Backend>(std::make_shared<PluginBackend>(std::move(plugin)));
}

}  // namespace

StatusOr<std::shared_ptr<Backend>> MakePluginBackend(const std::string& name,
                                                     InferdBackendEntryFn entry,
                                                     const std::string& origin) {
  const std::string who = "backend '" + name + "' (" + origin + ")";
  auto api = CheckedTable(who, entry);
  if (!api.ok()) return api.status();
  return Initialize(name, who, *api);
}

StatusOr<std::shared_ptr<Backend>> LoadPluginLibrary(const std::string& name,
                                                     const std::string& path) {
  const std::string who = "backend '" + name + "' (" + path + ")";
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    return Unavailable("backend '" + name + "': cannot load " + path + ": " +
                       (e ? e : "unknown error"));
  }
  auto entry = reinterpret_cast<InferdBackendEntryFn>(dlsym(handle, INFERD_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    dlclose(handle);
    return FailedPrecondition(who + " does not export " + INFERD_BACKEND_ENTRY_SYMBOL +
                              "; it is not an inferd backend");
  }
  auto api = CheckedTable(who, entry);
  if (!api.ok()) {
    dlclose(handle);  // none of its code but the entry point has run: safe to unload
    return api.status();
  }
  // From here on the library stays loaded for the life of the process, even
  // if initialize fails: frameworks do not survive being unloaded.
  return Initialize(name, who, *api);
}

}  // namespace inferd
