#include "backend/plugin_backend.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "core/sanitize.h"
#include "core/shape.h"

// The opaque types of the C ABI, defined here on the server's side.
struct InferdError {
  InferdErrorCode code;
  std::string message;
};

struct InferdRequest {
  inferd::ExecutionItem* item;
  const std::vector<inferd::TensorSpec>* outputs;  // the model's configured outputs
};

namespace inferd {

// The C enums are the core's enums, value for value.
static_assert(INFERD_TYPE_BF16 == static_cast<int>(DataType::kBf16) &&
              INFERD_TYPE_BYTES == static_cast<int>(DataType::kBytes) &&
              INFERD_TYPE_FP32 == static_cast<int>(DataType::kFp32));
static_assert(INFERD_ERROR_UNAVAILABLE == static_cast<int>(StatusCode::kUnavailable) &&
              INFERD_ERROR_INVALID_ARGUMENT == static_cast<int>(StatusCode::kInvalidArgument));
static_assert(INFERD_MEMORY_GPU == static_cast<int>(MemoryType::kGpu));

namespace {

Status FailedPrecondition(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}

// ---- host services ----------------------------------------------------------
// Called by plugins through C function pointers: nothing may throw out of
// them. An allocation failure inside one aborts (noexcept), as it would in
// any C allocator-based API.

InferdError* ErrorNew(InferdErrorCode code, const char* message) noexcept {
  return new InferdError{code, message ? message : ""};
}
InferdErrorCode ErrorCode(const InferdError* e) noexcept {
  return e ? e->code : INFERD_ERROR_UNKNOWN;
}
const char* ErrorMessage(const InferdError* e) noexcept { return e ? e->message.c_str() : ""; }
void ErrorDelete(InferdError* e) noexcept { delete e; }

void Log(InferdLogLevel level, const char* message) noexcept {
  const char* tag = level == INFERD_LOG_ERROR     ? "error: "
                    : level == INFERD_LOG_WARNING ? "warning: "
                                                  : "";
  // Escaped: a backend message cannot split or forge log lines.
  std::fprintf(stderr, "inferd: backend: %s%s\n", tag,
               EscapeControl(message ? message : "").c_str());
}

const char* RequestId(const InferdRequest* r) noexcept { return r->item->request->id.c_str(); }

uint32_t RequestInputCount(const InferdRequest* r) noexcept {
  return static_cast<uint32_t>(r->item->request->inputs.size());
}

void FillTensor(const InferInput& in, InferdTensor* t) noexcept {
  t->name = in.name.c_str();
  t->datatype = static_cast<InferdDataType>(in.datatype);
  t->dims_count = static_cast<uint32_t>(in.shape.size());
  t->shape = in.shape.data();
  t->buffer = in.data.data;
  t->byte_size = in.data.byte_size;
  t->memory_type = static_cast<InferdMemoryType>(in.data.memory_type);
  t->device_id = in.data.device_id;
}

InferdError* RequestInput(const InferdRequest* r, uint32_t index, InferdTensor* t) noexcept {
  const auto& inputs = r->item->request->inputs;
  if (t == nullptr) return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "request_input: tensor is NULL");
  if (index >= inputs.size()) {
    return ErrorNew(INFERD_ERROR_NOT_FOUND,
                    ("request has no input at index " + std::to_string(index)).c_str());
  }
  FillTensor(inputs[index], t);
  return nullptr;
}

InferdError* RequestInputByName(const InferdRequest* r, const char* name,
                                InferdTensor* t) noexcept {
  if (name == nullptr || t == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "request_input_by_name: NULL argument");
  }
  const InferInput* in = r->item->request->FindInput(name);
  if (in == nullptr) {
    return ErrorNew(INFERD_ERROR_NOT_FOUND,
                    (std::string("request has no input '") + name + "'").c_str());
  }
  FillTensor(*in, t);
  return nullptr;
}

int32_t RequestOutputRequested(const InferdRequest* r, const char* name) noexcept {
  const auto& wanted = r->item->request->outputs;
  if (wanted.empty()) return 1;
  for (const auto& o : wanted) {
    if (name != nullptr && o.name == name) return 1;
  }
  return 0;
}

Status CheckOutput(const InferdRequest* r, const char* name, InferdDataType datatype,
                   const int64_t* shape, uint32_t dims_count, uint64_t byte_size) {
  if (name == nullptr) return InvalidArgument("output name is NULL");
  const TensorSpec* spec = nullptr;
  for (const auto& o : *r->outputs) {
    if (o.name == name) spec = &o;
  }
  const std::string q = std::string("output '") + name + "'";
  if (spec == nullptr) return InvalidArgument(q + " is not an output of the model");
  if (static_cast<int>(spec->datatype) != datatype) {
    return InvalidArgument(
        q + ": datatype " + std::string(DataTypeToProtocol(static_cast<DataType>(datatype))) +
        " differs from the configured " + std::string(DataTypeToProtocol(spec->datatype)));
  }
  if (r->item->response->FindOutput(name) != nullptr) {
    return InvalidArgument(q + " was already allocated for this request");
  }
  if (dims_count > 0 && shape == nullptr) return InvalidArgument(q + ": shape is NULL");
  std::span<const int64_t> dims(shape, dims_count);
  if (!ElementCount(dims)) {
    return InvalidArgument(q + ": invalid shape " + ShapeToString(dims));
  }
  if (spec->datatype != DataType::kBytes) {
    auto expected = ByteSize(spec->datatype, dims);
    if (!expected || *expected != byte_size) {
      return InvalidArgument(q + ": " + std::to_string(byte_size) + " bytes do not fit shape " +
                             ShapeToString(dims) + " of " +
                             std::string(DataTypeToProtocol(spec->datatype)));
    }
  }
  return Status::Ok();
}

InferdError* RequestOutputAlloc(InferdRequest* r, const char* name, InferdDataType datatype,
                                const int64_t* shape, uint32_t dims_count, uint64_t byte_size,
                                InferdMemoryType* memory_type, int64_t* device_id,
                                void** buffer) noexcept {
  if (buffer == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "request_output_alloc: buffer is NULL");
  }
  *buffer = nullptr;
  try {
    Status s = CheckOutput(r, name, datatype, shape, dims_count, byte_size);
    if (!s.ok()) return ErrorNew(static_cast<InferdErrorCode>(s.code()), s.message().c_str());
    auto& out = r->item->response->AddOutput(name, static_cast<DataType>(datatype),
                                             Shape(shape, shape + dims_count), byte_size);
    if (memory_type) *memory_type = INFERD_MEMORY_CPU;
    if (device_id) *device_id = 0;
    *buffer = out.buffer.data();
    if (*buffer == nullptr) *buffer = &out;  // zero bytes: any non-NULL pointer will do
    return nullptr;
  } catch (const std::bad_alloc&) {
    return ErrorNew(INFERD_ERROR_RESOURCE_EXHAUSTED,
                    (std::string("out of memory allocating output '") + name + "'").c_str());
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "request_output_alloc failed");
  }
}

void RequestSetError(InferdRequest* r, InferdError* error) noexcept {
  if (error == nullptr) return;
  if (r->item->status.ok()) {
    r->item->status = StatusFromPluginError(error);
    r->item->response->outputs.clear();
  } else {
    delete error;
  }
}

const InferdHostApi kHostApi = {
    INFERD_BACKEND_ABI_VERSION,
    ErrorNew,
    ErrorCode,
    ErrorMessage,
    ErrorDelete,
    Log,
    RequestId,
    RequestInputCount,
    RequestInput,
    RequestInputByName,
    RequestOutputRequested,
    RequestOutputAlloc,
    RequestSetError,
};

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
        config_json_(ctx.config_json) {
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
    for (auto& item : batch) requests_.push_back(InferdRequest{&item, &model_->outputs()});
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
  if (api->abi_version != INFERD_BACKEND_ABI_VERSION) {
    return FailedPrecondition(
        "it was built for backend ABI version " + std::to_string(api->abi_version) +
        ", this server speaks version " + std::to_string(INFERD_BACKEND_ABI_VERSION) +
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

const InferdHostApi* HostApi() { return &kHostApi; }

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
    err = api->initialize(&kHostApi, &state);
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
