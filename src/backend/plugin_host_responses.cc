// Host services: response factories and responses (plugin_host.h). A
// factory wraps the ResponseStream of its request's ExecutionItem; the
// stream (scheduler/response_stream.h) applies the decoupled rules, so the
// functions here only translate between the C types and the core's.
#include <new>

#include "backend/plugin_backend.h"
#include "backend/plugin_host.h"

namespace inferd::plugin_host {

InferdError* ResponseFactoryNew(InferdRequest* r, InferdResponseFactory** factory) noexcept {
  if (r == nullptr || factory == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "response_factory_new: NULL argument");
  }
  *factory = nullptr;
  try {
    auto stream = r->item->TakeOverResponse();
    if (!stream.ok()) return ErrorFromStatus(stream.status());
    *factory = new InferdResponseFactory{std::move(*stream), r->outputs};
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "response_factory_new failed");
  }
}

int32_t ResponseFactoryIsCancelled(const InferdResponseFactory* f) noexcept {
  return f != nullptr && f->stream->IsCancelled() ? 1 : 0;
}

// Dropping the last reference before FINAL finishes the request with
// INTERNAL (the stream's destructor).
void ResponseFactoryDelete(InferdResponseFactory* f) noexcept { delete f; }

InferdError* ResponseNew(InferdResponseFactory* f, InferdResponse** response) noexcept {
  if (f == nullptr || response == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "response_new: NULL argument");
  }
  try {
    *response = new InferdResponse{std::make_unique<InferResponse>(), f->outputs, {}};
    return nullptr;
  } catch (...) {
    *response = nullptr;
    return ErrorNew(INFERD_ERROR_RESOURCE_EXHAUSTED, "out of memory creating a response");
  }
}

InferdError* ResponseOutputAlloc(InferdResponse* r, const char* name, InferdDataType datatype,
                                 const int64_t* shape, uint32_t dims_count, uint64_t byte_size,
                                 InferdMemoryType* memory_type, int64_t* device_id,
                                 void** buffer) noexcept {
  if (r == nullptr || r->outputs == nullptr) {
    if (buffer) *buffer = nullptr;
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT,
                    "response_output_alloc: not a response the backend builds");
  }
  return AllocOutput(*r->outputs, *r->response, name, datatype, shape, dims_count, byte_size,
                     memory_type, device_id, buffer);
}

InferdError* ResponseSetParameter(InferdResponse* r, const char* key, InferdParameterType type,
                                  const void* value) noexcept {
  if (r == nullptr || key == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "response_set_parameter: NULL argument");
  }
  try {
    auto v = ParameterFromC(type, value);
    if (!v.ok()) return ErrorFromStatus(v.status());
    r->response->parameters[key] = std::move(*v);
    r->parameters_json.clear();
    return nullptr;
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "response_set_parameter failed");
  }
}

InferdError* ResponseSend(InferdResponseFactory* f, InferdResponse* response, uint32_t flags,
                          InferdError* error) noexcept {
  std::unique_ptr<InferdResponse> owned(response);  // the server's in every case
  if (f == nullptr) {
    if (error) delete error;
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "response_send: factory is NULL");
  }
  try {
    if (error != nullptr) {
      f->stream->SendError(StatusFromPluginError(error));
      return nullptr;
    }
    if ((flags & ~static_cast<uint32_t>(INFERD_RESPONSE_FINAL)) != 0) {
      return NewError(INFERD_ERROR_INVALID_ARGUMENT,
                      "response_send: unknown flags " + std::to_string(flags));
    }
    const bool final = (flags & INFERD_RESPONSE_FINAL) != 0;
    if (owned == nullptr && !final) {
      return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT,
                      "response_send: no response and no FINAL flag: nothing to send");
    }
    std::unique_ptr<InferResponse> core;
    if (owned) core = std::move(owned->response);
    Status s = f->stream->Send(std::move(core), final);
    return s.ok() ? nullptr : ErrorFromStatus(s);
  } catch (const std::bad_alloc&) {
    return ErrorNew(INFERD_ERROR_RESOURCE_EXHAUSTED, "out of memory sending a response");
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "response_send failed");
  }
}

uint32_t ResponseOutputCount(const InferdResponse* r) noexcept {
  return r ? static_cast<uint32_t>(r->response->outputs.size()) : 0;
}

InferdError* ResponseOutput(const InferdResponse* r, uint32_t index, InferdTensor* t) noexcept {
  if (r == nullptr || t == nullptr) {
    return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "response_output: NULL argument");
  }
  const auto& outputs = r->response->outputs;
  if (index >= outputs.size()) {
    return NewError(INFERD_ERROR_NOT_FOUND,
                    "response has no output at index " + std::to_string(index));
  }
  const InferOutput& o = outputs[index];
  t->name = o.name.c_str();
  t->datatype = static_cast<InferdDataType>(o.datatype);
  t->dims_count = static_cast<uint32_t>(o.shape.size());
  t->shape = o.shape.data();
  t->buffer = o.buffer.data();
  t->byte_size = o.buffer.size();
  t->memory_type = INFERD_MEMORY_CPU;
  t->device_id = 0;
  return nullptr;
}

const char* ResponseParametersJson(const InferdResponse* r) noexcept {
  if (r == nullptr) return "{}";
  auto* m = const_cast<InferdResponse*>(r);  // a cache; the holder's calls do not overlap
  if (m->parameters_json.empty()) m->parameters_json = ParametersJson(r->response->parameters);
  return m->parameters_json.c_str();
}

void ResponseDelete(InferdResponse* r) noexcept { delete r; }

}  // namespace inferd::plugin_host
