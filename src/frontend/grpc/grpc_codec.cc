#include "frontend/grpc/grpc_codec.h"

#include <bit>
#include <cstring>
#include <optional>

#include "core/bytes_tensor.h"

namespace inferd::grpc_frontend {
namespace {

// Typed contents are referenced in place when their element layout is the
// tensor's: little-endian, and a bool is one byte holding 0 or 1.
static_assert(std::endian::native == std::endian::little, "typed contents are viewed in place");
static_assert(sizeof(bool) == 1, "BOOL contents are viewed in place");

using inference::InferParameter;
using inference::InferTensorContents;
using inference::ModelInferRequest;
using ParamMap = google::protobuf::Map<std::string, InferParameter>;

// Client data quoted in an error: bounded and escaped (core/sanitize.h).
std::string Q(std::string_view s) { return "'" + Bounded(s) + "'"; }

const char* ParameterKind(const InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case InferParameter::kBoolParam:
      return "bool_param";
    case InferParameter::kInt64Param:
      return "int64_param";
    case InferParameter::kStringParam:
      return "string_param";
    case InferParameter::kDoubleParam:
      return "double_param";
    case InferParameter::kUint64Param:
      return "uint64_param";
    default:
      return "no value";
  }
}

Status WrongKind(const std::string& key, const char* expected, const InferParameter& p) {
  return InvalidArgument("invalid value type for '" + key + "' parameter, expected " + expected +
                         ", got " + ParameterKind(p));
}

bool IsSharedMemoryKey(const std::string& key) {
  return key == "shared_memory_region" || key == "shared_memory_byte_size" ||
         key == "shared_memory_offset";
}

// The wire's parameter types into the neutral ones, keys untouched: the
// core applies the reserved keys (ApplyReservedParameters).
Status DecodeRequestParameters(const ParamMap& params, InferRequest& req) {
  for (const auto& [key, p] : params) {
    switch (p.parameter_choice_case()) {
      case InferParameter::kBoolParam:
        req.parameters[key] = p.bool_param();
        break;
      case InferParameter::kInt64Param:
        req.parameters[key] = p.int64_param();
        break;
      case InferParameter::kUint64Param:
        req.parameters[key] = p.uint64_param();
        break;
      case InferParameter::kDoubleParam:
        req.parameters[key] = p.double_param();
        break;
      case InferParameter::kStringParam:
        req.parameters[key] = p.string_param();
        break;
      default:
        return InvalidArgument("parameter " + Q(key) + " has no value");
    }
  }
  return Status::Ok();
}

// The typed field a datatype's contents travel in; nullptr for FP16/BF16.
const char* ContentsFieldFor(DataType t) {
  switch (t) {
    case DataType::kBool:
      return "bool_contents";
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
      return "int_contents";
    case DataType::kInt64:
      return "int64_contents";
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
      return "uint_contents";
    case DataType::kUint64:
      return "uint64_contents";
    case DataType::kFp32:
      return "fp32_contents";
    case DataType::kFp64:
      return "fp64_contents";
    case DataType::kBytes:
      return "bytes_contents";
    default:
      return nullptr;
  }
}

template <typename T>
BufferView ViewOf(const google::protobuf::RepeatedField<T>& field) {
  return BufferView{reinterpret_cast<const char*>(field.data()),
                    static_cast<size_t>(field.size()) * sizeof(T), MemoryType::kCpu, 0};
}

template <typename Narrow, typename Wide>
BufferView Narrowed(const google::protobuf::RepeatedField<Wide>& field, InferRequest& req) {
  const size_t n = static_cast<size_t>(field.size());
  char* buf = req.Allocate(n * sizeof(Narrow));
  for (size_t i = 0; i < n; ++i) {
    const Narrow v = static_cast<Narrow>(field.Get(static_cast<int>(i)));  // low bytes
    std::memcpy(buf + i * sizeof(Narrow), &v, sizeof(Narrow));
  }
  return BufferView{buf, n * sizeof(Narrow), MemoryType::kCpu, 0};
}

// Converts typed contents into the input's data (a view into the message
// where the layout allows, else a request-owned buffer).
Status DecodeContents(const InferTensorContents& c, const std::string& model, InferInput& input,
                      InferRequest& req) {
  const char* expected = ContentsFieldFor(input.datatype);
  const std::pair<const char*, int> populated[] = {
      {"bool_contents", c.bool_contents_size()},     {"int_contents", c.int_contents_size()},
      {"int64_contents", c.int64_contents_size()},   {"uint_contents", c.uint_contents_size()},
      {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
      {"fp64_contents", c.fp64_contents_size()},     {"bytes_contents", c.bytes_contents_size()},
  };
  const std::string type(DataTypeToProtocol(input.datatype));
  if (expected == nullptr) {
    return InvalidArgument("input " + Q(input.name) + " for model " + Q(model) + ": " + type +
                           " data has no typed 'contents' field; send it in raw_input_contents");
  }
  for (const auto& [field, count] : populated) {
    if (count > 0 && std::strcmp(field, expected) != 0) {
      return InvalidArgument("unexpected explicit tensor data for input tensor " + Q(input.name) +
                             " for model " + Q(model) + ": " + field + " given for datatype " +
                             type + ", expected " + expected);
    }
  }
  switch (input.datatype) {
    case DataType::kBool:
      input.data = ViewOf(c.bool_contents());
      break;
    case DataType::kInt8:
      input.data = Narrowed<int8_t>(c.int_contents(), req);
      break;
    case DataType::kInt16:
      input.data = Narrowed<int16_t>(c.int_contents(), req);
      break;
    case DataType::kInt32:
      input.data = ViewOf(c.int_contents());
      break;
    case DataType::kInt64:
      input.data = ViewOf(c.int64_contents());
      break;
    case DataType::kUint8:
      input.data = Narrowed<uint8_t>(c.uint_contents(), req);
      break;
    case DataType::kUint16:
      input.data = Narrowed<uint16_t>(c.uint_contents(), req);
      break;
    case DataType::kUint32:
      input.data = ViewOf(c.uint_contents());
      break;
    case DataType::kUint64:
      input.data = ViewOf(c.uint64_contents());
      break;
    case DataType::kFp32:
      input.data = ViewOf(c.fp32_contents());
      break;
    case DataType::kFp64:
      input.data = ViewOf(c.fp64_contents());
      break;
    case DataType::kBytes: {
      size_t total = 0;
      for (const auto& e : c.bytes_contents()) total += 4 + e.size();
      auto serialised = std::make_shared<std::string>();
      serialised->reserve(total);
      for (const auto& e : c.bytes_contents()) AppendBytesElement(*serialised, e);
      input.data = BufferView{serialised->data(), serialised->size(), MemoryType::kCpu, 0};
      req.Hold(std::move(serialised));
      break;
    }
    default:
      return Internal("unhandled datatype " + type);
  }
  return Status::Ok();
}

// Reads shared_memory_region / _byte_size / _offset from a tensor's
// parameters. Returns nullopt when the tensor does not use shared memory.
StatusOr<std::optional<SharedMemorySlice>> DecodeSharedMemoryParameters(
    const ParamMap& params, const std::string& where, const SharedMemoryManager* shm) {
  const InferParameter* region = nullptr;
  std::optional<uint64_t> size, offset;
  for (const auto& [key, p] : params) {
    if (!IsSharedMemoryKey(key)) continue;
    if (key == "shared_memory_region") {
      if (p.parameter_choice_case() != InferParameter::kStringParam) {
        return InvalidArgument(where + ": " + WrongKind(key, "string_param", p).message());
      }
      region = &p;
      continue;
    }
    uint64_t value = 0;
    if (p.parameter_choice_case() == InferParameter::kInt64Param && p.int64_param() >= 0) {
      value = static_cast<uint64_t>(p.int64_param());
    } else if (p.parameter_choice_case() == InferParameter::kUint64Param) {
      value = p.uint64_param();
    } else if (p.parameter_choice_case() == InferParameter::kInt64Param) {
      return InvalidArgument(where + ": invalid value for '" + key + "' parameter, expected >= 0");
    } else {
      return InvalidArgument(where + ": " + WrongKind(key, "int64_param", p).message());
    }
    (key == "shared_memory_byte_size" ? size : offset) = value;
  }
  if (region == nullptr) {
    if (size || offset) {
      return InvalidArgument(where +
                             ": 'shared_memory_byte_size' and 'shared_memory_offset' need "
                             "'shared_memory_region'");
    }
    return std::optional<SharedMemorySlice>();
  }
  if (!size) {
    return InvalidArgument(where + ": 'shared_memory_region' needs 'shared_memory_byte_size'");
  }
  auto slice = ResolveSharedMemory(shm, where, region->string_param(), offset.value_or(0), *size);
  if (!slice.ok()) return slice.status();
  return std::optional<SharedMemorySlice>(std::move(*slice));
}

Status DecodeRequestedOutput(const ModelInferRequest::InferRequestedOutputTensor& o,
                             const SharedMemoryManager* shm, RequestedOutput& out,
                             DecodedInferRequest& decoded) {
  out.name = o.name();
  for (const auto& [key, p] : o.parameters()) {
    if (key != "classification") continue;
    if (p.parameter_choice_case() != InferParameter::kInt64Param) {
      return InvalidArgument("output " + Q(out.name) +
                             ": invalid value type for 'classification' parameter, expected "
                             "int64_param, got " +
                             ParameterKind(p));
    }
    if (p.int64_param() < 0) {
      return InvalidArgument("output " + Q(out.name) +
                             ": invalid value for 'classification' parameter, expected >= 0");
    }
    if (p.int64_param() > int64_t{UINT32_MAX}) {
      return InvalidArgument("output " + Q(out.name) + ": 'classification' is too large");
    }
    out.classification = static_cast<uint32_t>(p.int64_param());
  }
  const std::string where = "output " + Q(out.name);
  auto slice = DecodeSharedMemoryParameters(o.parameters(), where, shm);
  if (!slice.ok()) return slice.status();
  if (slice->has_value()) {
    if (out.classification > 0) {
      return InvalidArgument("Output can't set both 'shared_memory_region' and 'classification' (" +
                             where + ")");
    }
    decoded.shm_outputs[out.name] = std::move(**slice);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<DecodedInferRequest> DecodeInferRequest(std::shared_ptr<const ModelInferRequest> message,
                                                 const SharedMemoryManager* shm) {
  const ModelInferRequest& m = *message;
  auto version = ParseModelVersion(m.model_version());
  if (!version.ok()) return version.status();

  DecodedInferRequest out;
  out.request = std::make_unique<InferRequest>();
  InferRequest& req = *out.request;
  req.model_name = m.model_name();
  req.model_version = *version;
  req.id = m.id();
  INFERD_RETURN_IF_ERROR(DecodeRequestParameters(m.parameters(), req));

  const int raw_count = m.raw_input_contents_size();
  int next_raw = 0;
  req.inputs.reserve(static_cast<size_t>(m.inputs_size()));
  for (const auto& in : m.inputs()) {
    InferInput input;
    input.name = in.name();
    input.datatype = DataTypeFromProtocol(in.datatype());
    if (input.datatype == DataType::kInvalid) {
      return InvalidArgument("input " + Q(input.name) + " for model " + Q(m.model_name()) +
                             " has unknown datatype " + Q(in.datatype()));
    }
    input.shape.assign(in.shape().begin(), in.shape().end());
    // No parameters, no shared memory (and no error prefix to build).
    StatusOr<std::optional<SharedMemorySlice>> slice = std::optional<SharedMemorySlice>();
    if (!in.parameters().empty()) {
      slice = DecodeSharedMemoryParameters(in.parameters(), "input " + Q(input.name), shm);
    }
    if (!slice.ok()) return slice.status();
    if (slice->has_value()) {
      if (in.has_contents()) {
        return InvalidArgument("unexpected 'content' provided when using shared memory for input " +
                               std::string("tensor ") + Q(input.name) + " for model " +
                               Q(m.model_name()));
      }
      auto view = SharedMemoryInputView(**slice, "input " + Q(input.name), req);
      if (!view.ok()) return view.status();
      input.data = *view;
    } else if (in.has_contents()) {
      if (raw_count > 0) {
        return InvalidArgument(
            "contents field must not be specified when using "
            "raw_input_contents for " +
            Q(input.name) + " for model " + Q(m.model_name()));
      }
      INFERD_RETURN_IF_ERROR(DecodeContents(in.contents(), m.model_name(), input, req));
    } else {
      if (next_raw >= raw_count) {
        return InvalidArgument(
            "unable to find data for input tensor " + Q(input.name) + " for model " +
            Q(m.model_name()) + " in request: no typed contents and no raw_input_contents entry " +
            std::to_string(next_raw) + " (the request has " + std::to_string(raw_count) + ")");
      }
      const std::string& raw = m.raw_input_contents(next_raw++);
      input.data = BufferView{raw.data(), raw.size(), MemoryType::kCpu, 0};
    }
    req.inputs.push_back(std::move(input));
  }
  if (next_raw != raw_count) {
    return InvalidArgument("unexpected raw_input_contents for model " + Q(m.model_name()) + ": " +
                           std::to_string(raw_count) + " entries given, but " +
                           std::to_string(next_raw) + " input(s) take raw contents");
  }

  req.outputs.reserve(static_cast<size_t>(m.outputs_size()));
  for (const auto& o : m.outputs()) {
    RequestedOutput ro;
    INFERD_RETURN_IF_ERROR(DecodeRequestedOutput(o, shm, ro, out));
    req.outputs.push_back(std::move(ro));
  }
  req.Hold(std::move(message));
  return out;
}

Status EncodeInferResponse(const InferResponse& response,
                           const std::map<std::string, SharedMemoryOutput>& shm_outputs,
                           inference::ModelInferResponse* out) {
  out->Clear();
  out->set_model_name(response.model_name);
  out->set_model_version(std::to_string(response.model_version));
  out->set_id(response.id);
  auto& params = *out->mutable_parameters();
  for (const auto& [key, value] : response.parameters) {
    InferParameter& p = params[key];
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            p.set_bool_param(v);
          } else if constexpr (std::is_same_v<T, int64_t>) {
            p.set_int64_param(v);
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            p.set_uint64_param(v);
          } else if constexpr (std::is_same_v<T, double>) {
            p.set_double_param(v);
          } else {
            p.set_string_param(v);
          }
        },
        value);
  }
  out->mutable_outputs()->Reserve(static_cast<int>(response.outputs.size()));
  out->mutable_raw_output_contents()->Reserve(static_cast<int>(response.outputs.size()));
  for (const InferOutput& o : response.outputs) {
    auto* t = out->add_outputs();
    t->set_name(o.name);
    t->set_datatype(std::string(DataTypeToProtocol(o.datatype)));
    t->mutable_shape()->Add(o.shape.begin(), o.shape.end());
    std::string* raw = out->add_raw_output_contents();
    if (auto shm = shm_outputs.find(o.name); shm != shm_outputs.end()) {
      INFERD_RETURN_IF_ERROR(
          WriteSharedMemoryOutput(shm->second, o.name, o.buffer.data(), o.buffer.size()));
    } else if (o.buffer.size() > 0) {
      raw->assign(o.buffer.data(), o.buffer.size());
    }
  }
  return Status::Ok();
}

}  // namespace inferd::grpc_frontend
