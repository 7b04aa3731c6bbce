// Encoding of KServe v2 HTTP inference responses: JSON, with the binary
// tensor extension for outputs that ask for it. The JSON is always strict
// JSON (RFC 8259): non-finite floats are written as the strings "NaN",
// "Infinity", "-Infinity"; a BYTES element that is not UTF-8 fails the
// encoding with an error naming it, and names that are not are escaped
// (docs/decisions.md). The decoding half is in
// infer_codec.cc; both are declared in infer_codec.h.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>

#include "core/bytes_tensor.h"
#include "core/utf8.h"
#include "frontend/http/infer_codec.h"
#include "frontend/http/json_tensor_data.h"

namespace inferd::http {
namespace {

template <typename T, typename W>
void WriteElements(W& w, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> ||
                  std::is_same_v<T, uint32_t>) {
      w.Uint(v);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      w.Uint64(v);
    } else if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
                         std::is_same_v<T, int32_t>) {
      w.Int(v);
    } else if constexpr (std::is_same_v<T, int64_t>) {
      w.Int64(v);
    } else if (const char* name = NonFiniteName(static_cast<double>(v))) {
      w.String(name);  // JSON has no NaN or Infinity (docs/decisions.md)
    } else {
      w.Double(static_cast<double>(v));
    }
  }
}

// BYTES elements as JSON strings. JSON text is UTF-8: an element that is
// not (arbitrary bytes) cannot be written, and the client is told how to
// get it instead of a response no strict parser reads.
template <typename W>
Status WriteBytesElements(W& w, const InferOutput& o) {
  auto elements = SplitBytesElements(o.buffer.data(), o.buffer.size());
  if (!elements.ok()) return Internal("model produced a malformed BYTES output");
  size_t i = 0;
  for (auto e : *elements) {
    if (!IsValidUtf8(e)) {
      return InvalidArgument("output '" + o.name + "': element " + std::to_string(i) +
                             " is not valid UTF-8, which JSON cannot carry. Please use the binary "
                             "data format for output '" +
                             o.name + "' (parameters {\"binary_data\": true})");
    }
    w.String(e.data(), static_cast<rapidjson::SizeType>(e.size()));
    ++i;
  }
  return Status::Ok();
}

template <typename W>
Status WriteData(W& w, const InferOutput& o) {
  const char* d = o.buffer.data();
  const size_t size = o.buffer.size();
  const size_t es = DataTypeByteSize(o.datatype);
  w.StartArray();
  switch (o.datatype) {
    case DataType::kBool:
      for (size_t i = 0; i < size; ++i) w.Bool(d[i] != 0);
      break;
    case DataType::kUint8:
      WriteElements<uint8_t>(w, d, size / es);
      break;
    case DataType::kUint16:
      WriteElements<uint16_t>(w, d, size / es);
      break;
    case DataType::kUint32:
      WriteElements<uint32_t>(w, d, size / es);
      break;
    case DataType::kUint64:
      WriteElements<uint64_t>(w, d, size / es);
      break;
    case DataType::kInt8:
      WriteElements<int8_t>(w, d, size / es);
      break;
    case DataType::kInt16:
      WriteElements<int16_t>(w, d, size / es);
      break;
    case DataType::kInt32:
      WriteElements<int32_t>(w, d, size / es);
      break;
    case DataType::kInt64:
      WriteElements<int64_t>(w, d, size / es);
      break;
    case DataType::kFp32:
      WriteElements<float>(w, d, size / es);
      break;
    case DataType::kFp64:
      WriteElements<double>(w, d, size / es);
      break;
    case DataType::kBytes:
      INFERD_RETURN_IF_ERROR(WriteBytesElements(w, o));
      break;
    default:
      return InvalidArgument("sending " + std::string(DataTypeToProtocol(o.datatype)) +
                             " data via JSON is not supported. Please use the binary data format "
                             "for output '" +
                             o.name + "'");
  }
  w.EndArray();
  return Status::Ok();
}

// Names, the id and parameter strings come from the request (validated
// UTF-8 when it was parsed), the model's config and the backend: bytes that
// are not UTF-8 are escaped as "\xNN" text (core/utf8.h), as in every other
// body, rather than making the response unreadable.
template <typename W>
void WriteText(W& w, std::string_view s) {
  if (IsValidUtf8(s)) {  // the usual case: no copy
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    return;
  }
  const std::string text = EscapeInvalidUtf8(s);
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

template <typename W>
void WriteParameters(W& w, const Parameters& params) {
  w.StartObject();
  for (const auto& [k, v] : params) {
    WriteText(w, k);  // a key is a string to the writer
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>)
            w.Bool(x);
          else if constexpr (std::is_same_v<T, int64_t>)
            w.Int64(x);
          else if constexpr (std::is_same_v<T, uint64_t>)
            w.Uint64(x);
          else if constexpr (std::is_same_v<T, double>)
            NonFiniteName(x) ? w.String(NonFiniteName(x)) : w.Double(x);
          else
            WriteText(w, x);
        },
        v);
  }
  w.EndObject();
}

// Where the outputs' binary blobs go, after the JSON.
struct Blobs {
  std::vector<const InferOutput*> outputs;
  size_t bytes = 0;
};

// One output object: its data as JSON, a binary blob, or written to shared
// memory.
template <typename W>
Status WriteOutput(W& w, const InferOutput& o, const OutputEncoding& encoding, Blobs& blobs) {
  w.StartObject();
  w.Key("name");
  WriteText(w, o.name);
  w.Key("datatype");
  w.String(DataTypeToProtocol(o.datatype).data());
  w.Key("shape");
  w.StartArray();
  for (int64_t d : o.shape) w.Int64(d);
  w.EndArray();
  if (auto shm = encoding.shared_memory.find(o.name); shm != encoding.shared_memory.end()) {
    INFERD_RETURN_IF_ERROR(
        WriteSharedMemoryOutput(shm->second, o.name, o.buffer.data(), o.buffer.size()));
  } else if (encoding.IsBinary(o.name)) {
    w.Key("parameters");
    w.StartObject();
    w.Key("binary_data_size");
    w.Uint64(o.buffer.size());
    w.EndObject();
    if (o.buffer.size() > 0) {
      blobs.outputs.push_back(&o);
      blobs.bytes += o.buffer.size();
    }
  } else {
    w.Key("data");
    INFERD_RETURN_IF_ERROR(WriteData(w, o));
  }
  w.EndObject();
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> EncodeJsonTensorData(const InferOutput& output) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  INFERD_RETURN_IF_ERROR(WriteData(w, output));
  return std::string(buf.GetString(), buf.GetSize());
}

StatusOr<EncodedResponse> EncodeInferResponse(const InferResponse& response,
                                              const OutputEncoding& encoding) {
  rapidjson::StringBuffer buf;
  // Not rapidjson's validating writer: it transcodes every string character
  // by character (about 1 % more instructions per request, bench/ab). Every string written
  // here is either ASCII, checked once by WriteText, or a BYTES element
  // checked by WriteBytesElements; the fuzz target checks the result.
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  if (!response.id.empty()) {
    w.Key("id");
    WriteText(w, response.id);
  }
  w.Key("model_name");
  WriteText(w, response.model_name);
  w.Key("model_version");
  w.String(std::to_string(response.model_version).c_str());
  if (!response.parameters.empty()) {
    w.Key("parameters");
    WriteParameters(w, response.parameters);
  }
  w.Key("outputs");
  w.StartArray();
  Blobs blobs;
  for (const auto& o : response.outputs) {
    INFERD_RETURN_IF_ERROR(WriteOutput(w, o, encoding, blobs));
  }
  w.EndArray();
  w.EndObject();
  EncodedResponse out;
  out.body.reserve(buf.GetSize() + blobs.bytes);
  out.body.assign(buf.GetString(), buf.GetSize());
  if (!blobs.outputs.empty()) {
    out.header_length = buf.GetSize();
    for (const InferOutput* o : blobs.outputs) out.body.append(o->buffer.data(), o->buffer.size());
  }
  return out;
}

}  // namespace inferd::http
