// Host services: errors, the log, and reading and answering the requests of
// a batch during instance_execute (plugin_host.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <new>

#include "backend/plugin_backend.h"
#include "backend/plugin_host.h"
#include "core/log.h"
#include "core/sanitize.h"
#include "core/shape.h"

namespace inferd::plugin_host {
namespace {

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
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

}  // namespace

InferdError* NewError(InferdErrorCode code, const std::string& message) noexcept {
  return new InferdError{code, message};
}

InferdError* ErrorFromStatus(const Status& s) noexcept {
  return NewError(static_cast<InferdErrorCode>(s.code()), s.message());
}

std::string ParametersJson(const Parameters& parameters) {
  std::string out = "{";
  for (const auto& [key, value] : parameters) {
    if (out.size() > 1) out += ',';
    AppendJsonString(out, key);
    out += ':';
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            out += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, std::string>) {
            AppendJsonString(out, v);
          } else if constexpr (std::is_same_v<T, double>) {
            if (!std::isfinite(v)) {
              out += "null";
            } else {
              char buf[32];
              auto r = std::to_chars(buf, buf + sizeof(buf), v);
              out.append(buf, r.ptr);
            }
          } else {
            out += std::to_string(v);
          }
        },
        value);
  }
  return out + "}";
}

StatusOr<ParameterValue> ParameterFromC(InferdParameterType type, const void* value) {
  if (value == nullptr) return InvalidArgument("parameter value is NULL");
  switch (type) {
    case INFERD_PARAMETER_BOOL:
      return ParameterValue(*static_cast<const int32_t*>(value) != 0);
    case INFERD_PARAMETER_INT:
      return ParameterValue(*static_cast<const int64_t*>(value));
    case INFERD_PARAMETER_DOUBLE:
      return ParameterValue(*static_cast<const double*>(value));
    case INFERD_PARAMETER_STRING:
      return ParameterValue(std::string(static_cast<const char*>(value)));
  }
  return InvalidArgument("unknown parameter type " + std::to_string(type));
}

Status CheckOutputAlloc(const std::vector<TensorSpec>& outputs, const InferResponse& existing,
                        const char* name, InferdDataType datatype, const int64_t* shape,
                        uint32_t dims_count, uint64_t byte_size) {
  if (name == nullptr) return InvalidArgument("output name is NULL");
  const TensorSpec* spec = nullptr;
  for (const auto& o : outputs) {
    if (o.name == name) spec = &o;
  }
  // Built only for an error: this runs for every output of every request.
  auto q = [&] { return std::string("output '") + name + "'"; };
  if (spec == nullptr) return InvalidArgument(q() + " is not an output of the model");
  if (static_cast<int>(spec->datatype) != datatype) {
    return InvalidArgument(
        q() + ": datatype " + std::string(DataTypeToProtocol(static_cast<DataType>(datatype))) +
        " differs from the configured " + std::string(DataTypeToProtocol(spec->datatype)));
  }
  if (existing.FindOutput(name) != nullptr) {
    return InvalidArgument(q() + " was already allocated for this request");
  }
  if (dims_count > 0 && shape == nullptr) return InvalidArgument(q() + ": shape is NULL");
  std::span<const int64_t> dims(shape, dims_count);
  if (!ElementCount(dims)) {
    return InvalidArgument(q() + ": invalid shape " + ShapeToString(dims));
  }
  if (spec->datatype != DataType::kBytes) {
    auto expected = ByteSize(spec->datatype, dims);
    if (!expected || *expected != byte_size) {
      return InvalidArgument(q() + ": " + std::to_string(byte_size) + " bytes do not fit shape " +
                             ShapeToString(dims) + " of " +
                             std::string(DataTypeToProtocol(spec->datatype)));
    }
  }
  return Status::Ok();
}

InferdError* AllocOutput(const std::vector<TensorSpec>& outputs, InferResponse& response,
                         const char* name, InferdDataType datatype, const int64_t* shape,
                         uint32_t dims_count, uint64_t byte_size, InferdMemoryType* memory_type,
                         int64_t* device_id, void** buffer) noexcept {
  if (buffer == nullptr) return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "output buffer is NULL");
  *buffer = nullptr;
  try {
    Status s = CheckOutputAlloc(outputs, response, name, datatype, shape, dims_count, byte_size);
    if (!s.ok()) return ErrorFromStatus(s);
    auto& out = response.AddOutput(name, static_cast<DataType>(datatype),
                                   Shape(shape, shape + dims_count), byte_size);
    if (memory_type) *memory_type = INFERD_MEMORY_CPU;
    if (device_id) *device_id = 0;
    *buffer = out.buffer.data();
    if (*buffer == nullptr) *buffer = &out;  // zero bytes: any non-NULL pointer will do
    return nullptr;
  } catch (const std::bad_alloc&) {
    return NewError(INFERD_ERROR_RESOURCE_EXHAUSTED,
                    std::string("out of memory allocating output '") + name + "'");
  } catch (...) {
    return ErrorNew(INFERD_ERROR_INTERNAL, "output allocation failed");
  }
}

// ---- errors and the log --------------------------------------------------------

InferdError* ErrorNew(InferdErrorCode code, const char* message) noexcept {
  return new InferdError{code, message ? message : ""};
}
InferdErrorCode ErrorCode(const InferdError* e) noexcept {
  return e ? e->code : INFERD_ERROR_UNKNOWN;
}
const char* ErrorMessage(const InferdError* e) noexcept { return e ? e->message.c_str() : ""; }
void ErrorDelete(InferdError* e) noexcept { delete e; }

void Log(InferdLogLevel level, const char* message) noexcept {
  const LogLevel at = level == INFERD_LOG_ERROR     ? LogLevel::kError
                      : level == INFERD_LOG_WARNING ? LogLevel::kWarning
                                                    : LogLevel::kInfo;
  if (!LogEnabled(at)) return;
  const char* tag = at == LogLevel::kError     ? "error: "
                    : at == LogLevel::kWarning ? "warning: "
                                               : "";
  const std::string_view text = message ? message : "";
  // Escaped: a backend message cannot split or forge log lines. The text
  // formats keep the line this always was ("inferd: backend: error: ...").
  LogPassOn(at, "backend", std::string("backend: ") + tag + EscapeControl(text), text);
}

// ---- requests (v1) ---------------------------------------------------------------

const char* RequestId(const InferdRequest* r) noexcept { return r->item->request->id.c_str(); }

uint32_t RequestInputCount(const InferdRequest* r) noexcept {
  return static_cast<uint32_t>(r->item->request->inputs.size());
}

InferdError* RequestInput(const InferdRequest* r, uint32_t index, InferdTensor* t) noexcept {
  const auto& inputs = r->item->request->inputs;
  if (t == nullptr) return ErrorNew(INFERD_ERROR_INVALID_ARGUMENT, "request_input: tensor is NULL");
  if (index >= inputs.size()) {
    return NewError(INFERD_ERROR_NOT_FOUND,
                    "request has no input at index " + std::to_string(index));
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
    return NewError(INFERD_ERROR_NOT_FOUND, std::string("request has no input '") + name + "'");
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

InferdError* RequestOutputAlloc(InferdRequest* r, const char* name, InferdDataType datatype,
                                const int64_t* shape, uint32_t dims_count, uint64_t byte_size,
                                InferdMemoryType* memory_type, int64_t* device_id,
                                void** buffer) noexcept {
  return AllocOutput(*r->outputs, *r->item->response, name, datatype, shape, dims_count, byte_size,
                     memory_type, device_id, buffer);
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

// ---- requests (v2 metadata) --------------------------------------------------------

InferdCorrelationKind RequestCorrelationId(const InferdRequest* r, uint64_t* uint_id,
                                           const char** string_id) noexcept {
  const CorrelationId& id = r->item->request->correlation_id;
  if (const auto* u = std::get_if<uint64_t>(&id)) {
    if (uint_id) *uint_id = *u;
    return INFERD_CORRELATION_UINT;
  }
  if (const auto* s = std::get_if<std::string>(&id)) {
    if (string_id) *string_id = s->c_str();
    return INFERD_CORRELATION_STRING;
  }
  return INFERD_CORRELATION_NONE;
}

uint32_t RequestFlags(const InferdRequest* r) noexcept {
  const InferRequest& q = *r->item->request;
  uint32_t flags = 0;
  if (q.sequence_start) flags |= INFERD_REQUEST_SEQUENCE_START;
  if (q.sequence_end) flags |= INFERD_REQUEST_SEQUENCE_END;
  return flags;
}

uint64_t RequestTimeoutUs(const InferdRequest* r) noexcept { return r->item->request->timeout_us; }

const char* RequestParametersJson(const InferdRequest* r) noexcept {
  auto* m = const_cast<InferdRequest*>(r);  // a cache; one instance thread uses it
  if (!m->parameters_made) {
    m->parameters_json = ParametersJson(r->item->request->parameters);
    m->parameters_made = true;
  }
  return m->parameters_json.c_str();
}

uint32_t RequestOutputNameCount(const InferdRequest* r) noexcept {
  const auto& wanted = r->item->request->outputs;
  return static_cast<uint32_t>(wanted.empty() ? r->outputs->size() : wanted.size());
}

const char* RequestOutputName(const InferdRequest* r, uint32_t index) noexcept {
  const auto& wanted = r->item->request->outputs;
  if (wanted.empty()) return index < r->outputs->size() ? (*r->outputs)[index].name.c_str() : "";
  return index < wanted.size() ? wanted[index].name.c_str() : "";
}

int32_t RequestIsCancelled(const InferdRequest* r) noexcept {
  return r->item->request->IsCancelled() ? 1 : 0;
}

uint32_t RequestCpuThreads(const InferdRequest* r) noexcept {
  if (r == nullptr || r->item == nullptr) return 0;
  return static_cast<uint32_t>(std::max(0, r->item->cpu_threads));
}

}  // namespace inferd::plugin_host
