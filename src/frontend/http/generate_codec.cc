#include "frontend/http/generate_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <set>

#include "core/sanitize.h"
#include "core/utf8.h"
#include "frontend/http/infer_codec.h"
#include "frontend/http/json_parameters.h"
#include "frontend/http/json_tensor_data.h"

namespace inferd::http {
namespace {

using rapidjson::Value;

// As the infer codec: JSON text must be UTF-8; NaN/Infinity literals are
// read for floating-point inputs.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseNanAndInfFlag |
                                 rapidjson::kParseValidateEncodingFlag;

std::string Q(std::string_view s) { return "'" + Bounded(s) + "'"; }

// The JSON kind an element of `t` must be, in the words of Triton's JSON
// helper (what generate clients see there for a value of the wrong kind).
Status CheckElementKind(const Value& e, DataType t) {
  switch (t) {
    case DataType::kBytes:
      if (!e.IsString()) return InvalidArgument("attempt to access JSON non-string as string");
      return Status::Ok();
    case DataType::kBool:
      if (!e.IsBool()) return InvalidArgument("attempt to access JSON non-boolean as boolean");
      return Status::Ok();
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
      if (!e.IsNumber()) {
        return InvalidArgument("attempt to access JSON non-signed-integer as signed-integer");
      }
      return Status::Ok();
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      if (!e.IsNumber()) {
        return InvalidArgument("attempt to access JSON non-unsigned-integer as unsigned-integer");
      }
      return Status::Ok();
    default:  // FP32/FP64 (strings spell NaN and infinities); FP16/BF16 refused later
      if (!e.IsNumber() && !e.IsString()) {
        return InvalidArgument("attempt to access JSON non-number as number");
      }
      return Status::Ok();
  }
}

// What decoding one body shares.
struct Decoder {
  const ModelSpec& spec;
  const GenerateLimits& limits;
  InferRequest& req;
  std::set<std::string> seen;  // inputs added so far
  uint64_t bytes = 0;          // input bytes so far

  const TensorSpec* Input(std::string_view name) const { return spec.FindInput(name); }

  Status AddInput(const TensorSpec& ts, const Value& value) {
    if (!seen.insert(ts.name).second) {
      return InvalidArgument("input " + Q(ts.name) + " already exists in request");
    }
    // One element, or a flat array of them (nested arrays: the flat form
    // is the one the extension defines).
    rapidjson::Document holder;
    const Value* data = &value;
    if (!value.IsArray()) {
      holder.SetArray();
      holder.PushBack(Value(value, holder.GetAllocator()), holder.GetAllocator());
      data = &holder;
    }
    for (const auto& e : data->GetArray()) {
      if (e.IsArray() || e.IsObject()) {
        return InvalidArgument("input " + Q(ts.name) +
                               ": expected a scalar or a flat array of its datatype");
      }
      INFERD_RETURN_IF_ERROR(CheckElementKind(e, ts.datatype));
    }
    Shape dims = ts.dims;
    if (spec.max_batch_size > 0) dims.insert(dims.begin(), -1);
    auto shape = FillGenerateShape(dims, data->Size());
    if (!shape) {
      return InvalidArgument("The schema can not convert input " + Q(ts.name) +
                             " to tensor with proper shape");
    }
    InferInput& in = req.inputs.emplace_back();
    in.name = ts.name;
    in.datatype = ts.datatype;
    in.shape = std::move(*shape);
    DecodeLimits dl;
    dl.max_json_depth = 1;
    dl.max_bytes_elements = limits.max_bytes_elements;
    INFERD_RETURN_IF_ERROR(DecodeJsonData(*data, in, req, dl));
    const uint64_t n = in.data.byte_size;
    if (bytes + n > limits.max_input_bytes) {
      return InvalidArgument("request size of " + std::to_string(bytes + n) + " bytes with input " +
                             Q(ts.name) + " of size " + std::to_string(n) +
                             " bytes exceeds the maximum allowed input size of " +
                             std::to_string(limits.max_input_bytes) +
                             ". Use --http-max-input-size to increase the limit.");
    }
    bytes += n;
    return Status::Ok();
  }

  // The rule every key follows: an input of that name, else a parameter.
  Status AddMember(const std::string& key, const Value& value) {
    if (const TensorSpec* ts = Input(key)) return AddInput(*ts, value);
    auto param = JsonParameterValue(key, value);
    if (!param.ok()) return param.status();
    req.parameters[key] = std::move(*param);
    return Status::Ok();
  }
};

// A JSON string, escaped where it is not UTF-8 (names and ids travel as
// given; the body stays strict JSON).
std::string JsonString(std::string_view s) {
  const std::string text = IsValidUtf8(s) ? std::string(s) : EscapeInvalidUtf8(s);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

std::string JsonParameter(const ParameterValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return JsonString(x);
        } else if constexpr (std::is_same_v<T, double>) {
          if (const char* name = NonFiniteName(x)) return JsonString(name);
          rapidjson::StringBuffer buf;
          rapidjson::Writer<rapidjson::StringBuffer> w(buf);
          w.Double(x);
          return std::string(buf.GetString(), buf.GetSize());
        } else {
          return std::to_string(x);
        }
      },
      v);
}

}  // namespace

std::optional<Shape> FillGenerateShape(const Shape& dims, uint64_t count) {
  Shape shape = dims;
  uint64_t rest = count;
  bool zero_dim = false;
  std::optional<size_t> innermost_wildcard;
  for (size_t i = dims.size(); i-- > 0;) {
    const int64_t d = dims[i];
    if (d < 0) {
      if (!innermost_wildcard) innermost_wildcard = i;
      shape[i] = 1;
      continue;
    }
    if (d == 0) {
      if (rest != 0) return std::nullopt;
      zero_dim = true;
      continue;
    }
    if (rest % static_cast<uint64_t>(d) != 0) return std::nullopt;
    rest /= static_cast<uint64_t>(d);
  }
  if (innermost_wildcard) {
    if (zero_dim) return std::nullopt;  // a fixed 0 leaves nothing to fill
    shape[*innermost_wildcard] = static_cast<int64_t>(rest);
    return shape;
  }
  if (zero_dim ? rest != 0 : rest != 1) return std::nullopt;
  return shape;
}

StatusOr<std::unique_ptr<InferRequest>> DecodeGenerateRequest(std::string_view body,
                                                              const ModelSpec& spec,
                                                              const std::string& model_name,
                                                              int64_t model_version,
                                                              const GenerateLimits& limits) {
  auto req = std::make_unique<InferRequest>();
  req->model_name = model_name;
  req->model_version = model_version;
  rapidjson::Document doc;
  if (body.empty()) {
    doc.SetObject();
  } else {
    // Nesting: the object, `parameters`, an input's array; deeper is never
    // valid, so it is refused before the parse.
    if (JsonNestingDepth(body.data(), body.size(), limits.max_json_depth) > limits.max_json_depth) {
      return InvalidArgument("request JSON is nested deeper than " +
                             std::to_string(limits.max_json_depth) + " levels");
    }
    doc.Parse<kParseFlags>(body.data(), body.size());
    if (doc.HasParseError()) {
      return InvalidArgument("failed to parse the request JSON: " +
                             std::string(rapidjson::GetParseError_En(doc.GetParseError())) +
                             " (at byte " + std::to_string(doc.GetErrorOffset()) + ")");
    }
    if (!doc.IsObject()) return InvalidArgument("the request JSON must be an object");
  }
  Decoder dec{spec, limits, *req, {}, 0};
  for (const auto& m : doc.GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    if (key == "id") {
      if (!m.value.IsString()) {
        return InvalidArgument("Unable to parse 'id': expected a string");
      }
      req->id.assign(m.value.GetString(), m.value.GetStringLength());
    } else if (key == "parameters") {
      if (dec.Input(key) != nullptr) {
        return InvalidArgument(
            "Keyword 'parameters' for nested schema also given as input tensor name");
      }
      if (!m.value.IsObject()) {
        return InvalidArgument("Expected JSON object for keyword: 'parameters'");
      }
      for (const auto& p : m.value.GetObject()) {
        INFERD_RETURN_IF_ERROR(
            dec.AddMember(std::string(p.name.GetString(), p.name.GetStringLength()), p.value));
      }
      continue;
    }
    // `id` too: an input of that name, else a string parameter.
    INFERD_RETURN_IF_ERROR(dec.AddMember(key, m.value));
  }
  return req;
}

StatusOr<std::string> EncodeGenerateResponse(const InferResponse& response) {
  // Key -> JSON value; std::map orders the keys byte-wise, emplace keeps the
  // first of a clash (reserved keys, then parameters, then outputs).
  std::map<std::string, std::string> members;
  if (!response.id.empty()) members.emplace("id", JsonString(response.id));
  members.emplace("model_name", JsonString(response.model_name));
  members.emplace("model_version", JsonString(std::to_string(response.model_version)));
  for (const auto& [k, v] : response.parameters) members.emplace(k, JsonParameter(v));
  for (const auto& o : response.outputs) {
    if (members.count(o.name)) continue;
    auto data = EncodeJsonTensorData(o);
    if (!data.ok()) return data.status();
    std::string value = std::move(*data);
    // One element: the bare value ("[x]" -> "x").
    const auto count = ElementCount(o.shape);
    if (count && *count == 1 && value.size() > 2) value = value.substr(1, value.size() - 2);
    members.emplace(o.name, std::move(value));
  }
  std::string out = "{";
  for (const auto& [k, v] : members) {
    if (out.size() > 1) out += ',';
    out += JsonString(k);
    out += ':';
    out += v;
  }
  out += '}';
  return out;
}

std::string SseEvent(std::string_view json) {
  std::string e;
  e.reserve(json.size() + 8);
  e.append("data: ").append(json).append("\n\n");
  return e;
}

}  // namespace inferd::http
