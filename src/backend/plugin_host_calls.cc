// Host services: calls into the server (infer_*), model health
// (model_set_unavailable), and the host table every plugin receives
// (plugin_host.h).
#include <atomic>
#include <cstring>

#include "backend/inference_caller.h"
#include "backend/plugin_backend.h"
#include "backend/plugin_host.h"
#include "core/log.h"
#include "core/sanitize.h"

namespace inferd {
namespace {
std::atomic<InferenceCaller*> g_caller{nullptr};
}  // namespace

void SetInferenceCaller(InferenceCaller* caller) { g_caller.store(caller); }
void ClearInferenceCaller(InferenceCaller* caller) {
  g_caller.compare_exchange_strong(caller, nullptr);
}
InferenceCaller* GetInferenceCaller() { return g_caller.load(); }

namespace plugin_host {
namespace {

// Delivers a call's responses to the backend's callback: each response as a
// received InferdResponse (the backend owns it), an error, or FINAL alone.
class CallbackSink final : public InferResponseSink {
 public:
  CallbackSink(InferdInferCallback callback, void* user_data)
      : callback_(callback), user_data_(user_data) {}
  ~CallbackSink() override {
    if (!done_) Finish(Internal("the server dropped the call without a final response"));
  }

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (done_) return;
    done_ = final;
    auto* r = new InferdResponse{std::move(response), nullptr, {}};
    Call(r, nullptr, final ? static_cast<uint32_t>(INFERD_RESPONSE_FINAL) : 0u);
  }

  void Finish(Status status) override {
    if (done_) return;
    done_ = true;
    Call(nullptr, status.ok() ? nullptr : ErrorFromStatus(status), INFERD_RESPONSE_FINAL);
  }

 private:
  void Call(InferdResponse* response, InferdError* error, uint32_t flags) {
    try {
      callback_(user_data_, response, error, flags);
    } catch (...) {  // a C++ backend broke the rule; the server stays up
      Log(INFERD_LOG_ERROR, "an infer callback let an exception escape");
    }
  }

  const InferdInferCallback callback_;
  void* const user_data_;
  bool done_ = false;  // calls never overlap (the sink contract)
};

InferdError* NullCall(const char* where) {
  return NewError(INFERD_ERROR_INVALID_ARGUMENT, std::string(where) + ": call is NULL");
}

}  // namespace

InferdError* InferNew(const char* model, int64_t version, InferdInferCall** call) noexcept {
  if (call == nullptr) return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_new: call is NULL");
  *call = nullptr;
  if (model == nullptr || *model == '\0') {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_new: no model name");
  }
  try {
    auto request = std::make_unique<InferRequest>();
    request->model_name = model;
    request->model_version = version < 0 ? -1 : version;
    *call = new InferdInferCall{std::move(request)};
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_RESOURCE_EXHAUSTED, "out of memory creating a call");
  }
}

InferdError* InferSetId(InferdInferCall* call, const char* id) noexcept {
  if (call == nullptr) return NullCall("infer_set_id");
  call->request->id = id ? id : "";
  return nullptr;
}

InferdError* InferSetCorrelationId(InferdInferCall* call, InferdCorrelationKind kind,
                                   uint64_t uint_id, const char* string_id) noexcept {
  if (call == nullptr) return NullCall("infer_set_correlation_id");
  switch (kind) {
    case INFERD_CORRELATION_NONE:
      call->request->correlation_id = std::monostate{};
      return nullptr;
    case INFERD_CORRELATION_UINT:
      call->request->correlation_id = uint_id;
      return nullptr;
    case INFERD_CORRELATION_STRING:
      if (string_id == nullptr) {
        return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_set_correlation_id: string is NULL");
      }
      call->request->correlation_id = std::string(string_id);
      return nullptr;
  }
  return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_set_correlation_id: unknown kind");
}

InferdError* InferSetFlags(InferdInferCall* call, uint32_t flags) noexcept {
  if (call == nullptr) return NullCall("infer_set_flags");
  if ((flags &
       ~static_cast<uint32_t>(INFERD_REQUEST_SEQUENCE_START | INFERD_REQUEST_SEQUENCE_END)) != 0) {
    return NewError(INFERD_ERROR_INVALID_ARGUMENT,
                    "infer_set_flags: unknown flags " + std::to_string(flags));
  }
  call->request->sequence_start = (flags & INFERD_REQUEST_SEQUENCE_START) != 0;
  call->request->sequence_end = (flags & INFERD_REQUEST_SEQUENCE_END) != 0;
  return nullptr;
}

InferdError* InferSetTimeoutUs(InferdInferCall* call, uint64_t timeout_us) noexcept {
  if (call == nullptr) return NullCall("infer_set_timeout_us");
  call->request->timeout_us = timeout_us;
  return nullptr;
}

InferdError* InferSetParameter(InferdInferCall* call, const char* key, InferdParameterType type,
                               const void* value) noexcept {
  if (call == nullptr) return NullCall("infer_set_parameter");
  if (key == nullptr) return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_set_parameter: no key");
  try {
    auto v = ParameterFromC(type, value);
    if (!v.ok()) return ErrorFromStatus(v.status());
    call->request->parameters[key] = std::move(*v);
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "infer_set_parameter failed");
  }
}

InferdError* InferAddInput(InferdInferCall* call, const char* name, InferdDataType datatype,
                           const int64_t* shape, uint32_t dims_count, const void* data,
                           uint64_t byte_size) noexcept {
  if (call == nullptr) return NullCall("infer_add_input");
  if (name == nullptr || (dims_count > 0 && shape == nullptr) || (byte_size > 0 && !data)) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_add_input: NULL argument");
  }
  if (call->request->FindInput(name) != nullptr) {
    return NewError(INFERD_ERROR_INVALID_ARGUMENT,
                    std::string("infer_add_input: input '") + name + "' was added already");
  }
  try {
    char* copy = call->request->Allocate(byte_size);
    if (byte_size > 0) std::memcpy(copy, data, byte_size);
    InferInput in;
    in.name = name;
    in.datatype = static_cast<DataType>(datatype);
    in.shape.assign(shape, shape + dims_count);
    in.data = BufferView{copy, byte_size, MemoryType::kCpu, 0};
    call->request->inputs.push_back(std::move(in));
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_RESOURCE_EXHAUSTED, "infer_add_input: out of memory");
  }
}

InferdError* InferAddRequestedOutput(InferdInferCall* call, const char* name) noexcept {
  if (call == nullptr) return NullCall("infer_add_requested_output");
  if (name == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_add_requested_output: no name");
  }
  call->request->outputs.push_back(RequestedOutput{name, 0});
  return nullptr;
}

InferdError* InferStart(InferdInferCall* call, InferdInferCallback callback,
                        void* user_data) noexcept {
  std::unique_ptr<InferdInferCall> owned(call);  // the server's whatever happens
  if (call == nullptr) return NullCall("infer_start");
  if (callback == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "infer_start: callback is NULL");
  }
  InferenceCaller* caller = GetInferenceCaller();
  if (caller == nullptr) {
    return ErrorNew(INFERD_ERROR_UNAVAILABLE, "calls into the server are not available here");
  }
  try {
    caller->Submit(std::move(owned->request), std::make_unique<CallbackSink>(callback, user_data));
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "infer_start failed");
  }
}

void InferDelete(InferdInferCall* call) noexcept { delete call; }

void ModelSetUnavailable(InferdHostModel* model, const char* reason) noexcept {
  if (model == nullptr || model->health == nullptr) return;
  try {
    const std::string why = reason ? reason : "";
    INFERD_LOG(Warning) << "backend marked a model unavailable: " << EscapeControl(why);
    model->health->MarkUnavailable(why);
  } catch (...) {
  }
}

namespace {

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
    // v2
    RequestCorrelationId,
    RequestFlags,
    RequestTimeoutUs,
    RequestParametersJson,
    RequestOutputNameCount,
    RequestOutputName,
    RequestIsCancelled,
    ResponseFactoryNew,
    ResponseFactoryIsCancelled,
    ResponseFactoryDelete,
    ResponseNew,
    ResponseOutputAlloc,
    ResponseSetParameter,
    ResponseSend,
    ResponseOutputCount,
    ResponseOutput,
    ResponseParametersJson,
    ResponseDelete,
    InferNew,
    InferSetId,
    InferSetCorrelationId,
    InferSetFlags,
    InferSetTimeoutUs,
    InferSetParameter,
    InferAddInput,
    InferAddRequestedOutput,
    InferStart,
    InferDelete,
    ModelSetUnavailable,
    // v3
    RequestCpuThreads,
};

}  // namespace
}  // namespace plugin_host

const InferdHostApi* HostApi() { return &plugin_host::kHostApi; }

}  // namespace inferd
