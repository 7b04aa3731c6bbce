#include "frontend/http/infer_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <cstring>
#include <set>

#include "core/bytes_tensor.h"
#include "core/reserved_parameters.h"
#include "core/sanitize.h"
#include "frontend/http/json_parameters.h"
#include "frontend/http/json_tensor_data.h"

namespace inferd::http {
namespace {

using rapidjson::Value;
// JSON text is UTF-8 (RFC 8259): a request that is not is refused whole, so
// nothing it carries (the id, names, BYTES data) is echoed back as text no
// strict parser can read.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNanAndInfFlag |
                                 rapidjson::kParseValidateEncodingFlag;

// Client data quoted in an error: bounded and escaped (core/sanitize.h).
std::string Q(std::string_view s) { return "'" + Bounded(s) + "'"; }

StatusOr<uint64_t> GetUint(const Value& obj, const char* key, const std::string& where) {
  const Value& v = obj[key];
  if (!v.IsUint64()) {
    return InvalidArgument(where + ": parameter '" + key + "' must be a non-negative integer");
  }
  return v.GetUint64();
}

// The parameters in neutral types; the core applies the reserved keys.
// `headers` (HTTP header forwarding's key, a JSON object) has no neutral
// type and is dropped here, as the core drops it from gRPC requests.
Status DecodeRequestParameters(const Value& params, InferRequest& req, OutputEncoding& enc) {
  INFERD_RETURN_IF_ERROR(
      DecodeJsonParameters(params, "request 'parameters'", req.parameters, "headers"));
  // JSON writes a sequence id as an unsigned integer (Triton's HTTP clients
  // send a uint64), so a negative one is a mistake, not an id: refused here
  // in the core's words. (gRPC's int64_param carries a uint64 id's bits, as
  // Triton's C++ client sends it; the core reads those as the id.)
  if (auto it = req.parameters.find("sequence_id"); it != req.parameters.end()) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second); i != nullptr && *i < 0) {
      return ParameterTypeError("parameter", "sequence_id", "an unsigned integer or a string",
                                it->second);
    }
  }
  // Its type is checked by the core: a non-bool fails the request there.
  if (auto it = req.parameters.find("binary_data_output"); it != req.parameters.end()) {
    if (const bool* b = std::get_if<bool>(&it->second)) enc.binary_default = *b;
  }
  return Status::Ok();
}

bool HasSharedMemory(const Value& params) {
  return params.IsObject() &&
         (params.HasMember("shared_memory_region") || params.HasMember("shared_memory_byte_size") ||
          params.HasMember("shared_memory_offset"));
}

// Parses and resolves shared_memory_region / _byte_size / _offset.
StatusOr<SharedMemorySlice> ResolveSharedMemoryParams(const Value& p, const std::string& where,
                                                      const SharedMemoryManager* shm) {
  if (!p.HasMember("shared_memory_region")) {
    return InvalidArgument(where +
                           ": 'shared_memory_byte_size' and 'shared_memory_offset' "
                           "need 'shared_memory_region'");
  }
  if (!p["shared_memory_region"].IsString()) {
    return InvalidArgument(where + ": 'shared_memory_region' must be a string");
  }
  if (!p.HasMember("shared_memory_byte_size")) {
    return InvalidArgument(where + ": 'shared_memory_region' needs 'shared_memory_byte_size'");
  }
  SharedMemorySlice ref;
  auto size = GetUint(p, "shared_memory_byte_size", where);
  if (!size.ok()) return size.status();
  ref.byte_size = *size;
  if (p.HasMember("shared_memory_offset")) {
    auto off = GetUint(p, "shared_memory_offset", where);
    if (!off.ok()) return off.status();
    ref.offset = *off;
  }
  return ResolveSharedMemory(shm, where, p["shared_memory_region"].GetString(), ref.offset,
                             ref.byte_size);
}

}  // namespace

size_t JsonNestingDepth(const char* data, size_t size, size_t limit) {
  // The bytes that can change the state below; the others (digits, commas,
  // spaces, letters: most of a tensor's data) are skipped in a tight loop.
  static constexpr auto kInteresting = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : {'"', '\\', '[', ']', '{', '}'}) t[c] = true;
    return t;
  }();
  size_t depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < size; ++i) {
    if (!escaped) {
      while (i < size && !kInteresting[static_cast<unsigned char>(data[i])]) ++i;
      if (i == size) break;
    }
    const char c = data[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > limit) return max_depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

namespace {

// Deepest request JSON parsed with the recursive parser: its stack use
// (a few hundred bytes per level) stays far below a thread's stack.
constexpr size_t kRecursiveParseDepth = 64;

// True when no byte has its high bit set (8 bytes per step).
bool IsAscii(const char* p, size_t n) {
  uint64_t bits = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    bits |= w;
  }
  for (; i < n; ++i) bits |= static_cast<unsigned char>(p[i]);
  return (bits & 0x8080808080808080ull) == 0;
}

Status NotAnObject() { return InvalidArgument("the request JSON must be an object"); }

// The checks made on the JSON header before it is parsed (size, NUL bytes,
// nesting), then the parse.
Status ParseRequestJson(const std::string& body, size_t json_len, const DecodeLimits& limits,
                        rapidjson::Document& doc) {
  if (json_len > body.size()) {
    return InvalidArgument("Inference-Header-Content-Length " + std::to_string(json_len) +
                           " is larger than the request body (" + std::to_string(body.size()) +
                           " bytes)");
  }
  if (json_len == 0) {
    return InvalidArgument("the request body is empty; expected a JSON inference request");
  }
  if (std::memchr(body.data(), '\0', json_len) != nullptr) {
    return InvalidArgument(
        "the request JSON contains a NUL byte (binary data needs "
        "Inference-Header-Content-Length)");
  }
  // Nesting: one level for the request object, inputs array, input object,
  // data array, then the tensor's own nesting.
  const size_t depth = JsonNestingDepth(body.data(), json_len, limits.max_json_depth + 4);
  if (depth > limits.max_json_depth + 4) {
    return InvalidArgument("request JSON is nested deeper than " +
                           std::to_string(limits.max_json_depth) + " levels");
  }
  // Fast paths, same results: rapidjson's recursive parser takes fewer
  // instructions than the iterative one (which bounds the stack for any
  // depth), so it runs when the nesting just measured is shallow; and ASCII
  // text (the usual request) cannot fail UTF-8 validation, which costs more
  // per string character than the rest of the parse. Should a fast parse
  // fail, the full one runs again, so errors read as they always have.
  if (depth <= kRecursiveParseDepth) {
    constexpr unsigned kRecursive = kParseFlags & ~rapidjson::kParseIterativeFlag;
    if (IsAscii(body.data(), json_len)) {
      doc.Parse<kRecursive & ~rapidjson::kParseValidateEncodingFlag>(body.data(), json_len);
    } else {
      doc.Parse<kRecursive>(body.data(), json_len);
    }
    if (!doc.HasParseError()) return doc.IsObject() ? Status::Ok() : NotAnObject();
  }
  doc.Parse<kParseFlags>(body.data(), json_len);
  if (doc.HasParseError()) {
    return InvalidArgument("failed to parse the request JSON: " +
                           std::string(rapidjson::GetParseError_En(doc.GetParseError())) +
                           " (at byte " + std::to_string(doc.GetErrorOffset()) + ")");
  }
  if (!doc.IsObject()) return NotAnObject();
  return Status::Ok();
}

// What decoding the inputs shares: the body and where its next unread
// binary byte is, the request being built, the shared-memory regions.
struct InputDecoder {
  const std::string& body;
  size_t offset;  // next unread binary byte
  InferRequest& req;
  const std::string& model_name;
  const DecodeLimits& limits;
  const SharedMemoryManager* shm;
};

// Name, datatype and shape of one input.
Status DecodeInputHeader(const Value& in, InferInput& input) {
  if (!in.IsObject()) return InvalidArgument("each element of 'inputs' must be an object");
  if (!in.HasMember("name") || !in["name"].IsString()) {
    return InvalidArgument("an input has no 'name' string");
  }
  input.name.assign(in["name"].GetString(), in["name"].GetStringLength());
  // Built only for an error: this runs for every input of every request.
  auto where = [&] { return "input " + Q(input.name); };
  if (!in.HasMember("datatype") || !in["datatype"].IsString()) {
    return InvalidArgument(where() + " has no 'datatype' string");
  }
  input.datatype = DataTypeFromProtocol(in["datatype"].GetString());
  if (input.datatype == DataType::kInvalid) {
    return InvalidArgument(where() + " has unknown datatype " + Q(in["datatype"].GetString()));
  }
  if (!in.HasMember("shape") || !in["shape"].IsArray()) {
    return InvalidArgument(where() + " has no 'shape' array");
  }
  for (const auto& d : in["shape"].GetArray()) {
    if (d.IsInt64() && d.GetInt64() < 0) {
      return InvalidArgument(where() + ": shape dimensions must be non-negative, got " +
                             std::to_string(d.GetInt64()));
    }
    if (!d.IsInt64()) {
      return InvalidArgument(where() + ": shape dimensions must be integers");
    }
    input.shape.push_back(d.GetInt64());
  }
  return Status::Ok();
}

// The input's data, from exactly one source: JSON 'data', binary bytes
// after the header, or a shared-memory region.
Status DecodeInputData(const Value& in, InferInput& input, InputDecoder& d) {
  auto where = [&] { return "input " + Q(input.name); };  // for errors only
  const Value* params = in.HasMember("parameters") ? &in["parameters"] : nullptr;
  if (params && !params->IsObject()) {
    return InvalidArgument(where() + ": 'parameters' must be an object");
  }
  const bool has_data = in.HasMember("data");
  const bool has_binary = params && params->HasMember("binary_data_size");
  const bool has_shm = params && HasSharedMemory(*params);
  if (int(has_data) + int(has_binary) + int(has_shm) != 1) {
    std::string set;
    if (has_data) set += " 'data'";
    if (has_binary) set += " 'binary_data_size'";
    if (has_shm) set += " 'shared_memory_region'";
    return InvalidArgument(where() +
                           ": input must set only one of the following fields: 'data', "
                           "'binary_data_size' in 'parameters', 'shared_memory_region' in "
                           "'parameters'. But " +
                           (set.empty() ? std::string("no field is set") : "set" + set));
  }
  if (has_data) return DecodeJsonData(in["data"], input, d.req, d.limits);
  if (has_shm) {
    auto ref = ResolveSharedMemoryParams(*params, where(), d.shm);
    if (!ref.ok()) return ref.status();
    auto view = SharedMemoryInputView(*ref, where(), d.req);
    if (!view.ok()) return view.status();
    input.data = *view;
    return Status::Ok();
  }
  auto size = GetUint(*params, "binary_data_size", where());
  if (!size.ok()) return size.status();
  if (*size > d.body.size() - d.offset) {
    return InvalidArgument("unexpected size for input " + Q(input.name) + ", expecting " +
                           std::to_string(*size) + " additional bytes for model " +
                           Q(d.model_name) + " but only " +
                           std::to_string(d.body.size() - d.offset) + " remain in the body");
  }
  input.data =
      BufferView{d.body.data() + d.offset, static_cast<size_t>(*size), MemoryType::kCpu, 0};
  d.offset += *size;
  return Status::Ok();
}

Status DecodeInputs(const Value& inputs, InputDecoder& d) {
  if (!inputs.IsArray()) return InvalidArgument("request 'inputs' must be an array");
  if (inputs.Size() > d.limits.max_inputs) {
    return InvalidArgument("the request has " + std::to_string(inputs.Size()) +
                           " inputs, more than the limit of " +
                           std::to_string(d.limits.max_inputs) + " (--max-request-inputs)");
  }
  for (const auto& in : inputs.GetArray()) {
    InferInput input;
    INFERD_RETURN_IF_ERROR(DecodeInputHeader(in, input));
    INFERD_RETURN_IF_ERROR(DecodeInputData(in, input, d));
    d.req.inputs.push_back(std::move(input));
  }
  if (d.offset != d.body.size()) {
    return InvalidArgument("unexpected additional input data for model " + Q(d.model_name) + ": " +
                           std::to_string(d.body.size() - d.offset) +
                           " bytes follow the declared binary inputs");
  }
  return Status::Ok();
}

// One requested output's parameters: binary_data, classification,
// shared_memory_*.
Status DecodeOutputParameters(const Value& p, RequestedOutput& ro, OutputEncoding& enc,
                              const SharedMemoryManager* shm) {
  const std::string where = "output " + Q(ro.name);
  if (!p.IsObject()) return InvalidArgument(where + ": 'parameters' must be an object");
  if (p.HasMember("binary_data")) {
    if (!p["binary_data"].IsBool()) {
      return InvalidArgument(where + ": 'binary_data' must be a boolean");
    }
    enc.binary[ro.name] = p["binary_data"].GetBool();
  }
  if (p.HasMember("classification")) {
    auto k = GetUint(p, "classification", where);
    if (!k.ok()) return k.status();
    if (*k > UINT32_MAX) return InvalidArgument(where + ": 'classification' is too large");
    ro.classification = static_cast<uint32_t>(*k);
  }
  if (!HasSharedMemory(p)) return Status::Ok();
  if (enc.binary[ro.name]) {
    return InvalidArgument("Output can't set both 'shared_memory_region' and 'binary_data' (" +
                           where + ")");
  }
  if (ro.classification > 0) {
    return InvalidArgument("Output can't set both 'shared_memory_region' and 'classification' (" +
                           where + ")");
  }
  auto ref = ResolveSharedMemoryParams(p, where, shm);
  if (!ref.ok()) return ref.status();
  enc.shared_memory[ro.name] = std::move(*ref);
  return Status::Ok();
}

Status DecodeOutputs(const Value& outputs, const DecodeLimits& limits,
                     const SharedMemoryManager* shm, DecodedInfer& out) {
  if (!outputs.IsArray()) return InvalidArgument("request 'outputs' must be an array");
  if (outputs.Size() > limits.max_outputs) {
    return InvalidArgument("the request asks for " + std::to_string(outputs.Size()) +
                           " outputs, more than the limit of " +
                           std::to_string(limits.max_outputs) + " (--max-request-outputs)");
  }
  for (const auto& o : outputs.GetArray()) {
    if (!o.IsObject() || !o.HasMember("name") || !o["name"].IsString()) {
      return InvalidArgument("each requested output needs a 'name' string");
    }
    RequestedOutput ro;
    ro.name.assign(o["name"].GetString(), o["name"].GetStringLength());
    out.encoding.binary[ro.name] = false;
    if (o.HasMember("parameters")) {
      INFERD_RETURN_IF_ERROR(DecodeOutputParameters(o["parameters"], ro, out.encoding, shm));
    }
    out.request->outputs.push_back(std::move(ro));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<DecodedInfer> DecodeInferRequest(const std::shared_ptr<const std::string>& body,
                                          std::optional<size_t> header_length,
                                          const std::string& model_name, int64_t model_version,
                                          const DecodeLimits& limits,
                                          const SharedMemoryManager* shm) {
  const size_t json_len = header_length.value_or(body->size());
  // The DOM of a small request lives in this buffer on the stack; a larger
  // one continues in heap chunks (rapidjson's default would malloc a 64 KiB
  // chunk for every request).
  char pool_buffer[8192];
  rapidjson::MemoryPoolAllocator<> pool(pool_buffer, sizeof(pool_buffer));
  rapidjson::Document doc(&pool);
  INFERD_RETURN_IF_ERROR(ParseRequestJson(*body, json_len, limits, doc));

  DecodedInfer out;
  out.request = std::make_unique<InferRequest>();
  InferRequest& req = *out.request;
  req.model_name = model_name;
  req.model_version = model_version;
  req.Hold(body);

  if (doc.HasMember("id")) {
    if (!doc["id"].IsString()) return InvalidArgument("request 'id' must be a string");
    req.id.assign(doc["id"].GetString(), doc["id"].GetStringLength());
  }
  if (doc.HasMember("parameters")) {
    INFERD_RETURN_IF_ERROR(DecodeRequestParameters(doc["parameters"], req, out.encoding));
  }
  if (!doc.HasMember("inputs")) return InvalidArgument("request JSON has no 'inputs' array");
  InputDecoder decoder{*body, json_len, req, model_name, limits, shm};
  INFERD_RETURN_IF_ERROR(DecodeInputs(doc["inputs"], decoder));
  if (doc.HasMember("outputs")) {
    INFERD_RETURN_IF_ERROR(DecodeOutputs(doc["outputs"], limits, shm, out));
  }
  return out;
}

StatusOr<DecodedInfer> DecodeRawBinaryRequest(const std::shared_ptr<const std::string>& body,
                                              const ModelSpec& spec, int64_t model_version) {
  if (spec.inputs.size() != 1) {
    return InvalidArgument(
        "a raw binary request (Inference-Header-Content-Length: 0) needs a "
        "model with exactly one input; model " +
        Q(spec.name) + " has " + std::to_string(spec.inputs.size()));
  }
  const TensorSpec& ts = spec.inputs[0];
  DecodedInfer out;
  out.request = std::make_unique<InferRequest>();
  InferRequest& req = *out.request;
  req.model_name = spec.name;
  req.model_version = model_version;
  req.Hold(body);
  InferInput input;
  input.name = ts.name;
  input.datatype = ts.datatype;
  if (ts.datatype == DataType::kBytes) {
    if (body->size() > UINT32_MAX) return InvalidArgument("raw BYTES element is too large");
    input.shape = {1};
    std::string element;
    AppendBytesElement(element, *body);
    char* buf = req.Allocate(element.size());
    std::memcpy(buf, element.data(), element.size());
    input.data = BufferView{buf, element.size(), MemoryType::kCpu, 0};
  } else {
    const size_t esize = DataTypeByteSize(ts.datatype);
    uint64_t known = esize;
    int wildcard = -1;
    for (size_t i = 0; i < ts.dims.size(); ++i) {
      if (ts.dims[i] == -1) {
        if (wildcard >= 0) {
          return InvalidArgument("a raw binary request needs input " + Q(ts.name) +
                                 " to have at most one variable dimension");
        }
        wildcard = static_cast<int>(i);
      } else {
        auto k = CheckedMul(known, static_cast<uint64_t>(ts.dims[i]));
        if (!k) return InvalidArgument("input " + Q(ts.name) + " is too large");
        known = *k;
      }
    }
    if (known == 0 || body->size() % known != 0 || (wildcard < 0 && body->size() != known)) {
      return InvalidArgument("raw binary body of " + std::to_string(body->size()) +
                             " bytes does not fit input " + Q(ts.name) + " with dims " +
                             ShapeToString(ts.dims));
    }
    input.shape = ts.dims;
    if (wildcard >= 0) input.shape[wildcard] = static_cast<int64_t>(body->size() / known);
    input.data = BufferView{body->data(), body->size(), MemoryType::kCpu, 0};
  }
  if (spec.max_batch_size > 0) input.shape.insert(input.shape.begin(), 1);
  req.inputs.push_back(std::move(input));
  out.encoding.binary_default = true;
  return out;
}

}  // namespace inferd::http
