// Encoding of KServe v2 HTTP inference responses: JSON, with the binary
// tensor extension for outputs that ask for it. The decoding half is in
// infer_codec.cc; both are declared in infer_codec.h.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>

#include "core/bytes_tensor.h"
#include "frontend/http/infer_codec.h"

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
    } else {
      w.Double(static_cast<double>(v));
    }
  }
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
    case DataType::kBytes: {
      auto elements = SplitBytesElements(d, size);
      if (!elements.ok()) return Internal("model produced a malformed BYTES output");
      for (auto e : *elements) w.String(e.data(), static_cast<rapidjson::SizeType>(e.size()));
      break;
    }
    default:
      return InvalidArgument("sending " + std::string(DataTypeToProtocol(o.datatype)) +
                             " data via JSON is not supported. Please use the binary data format "
                             "for output '" +
                             o.name + "'");
  }
  w.EndArray();
  return Status::Ok();
}

template <typename W>
void WriteParameters(W& w, const Parameters& params) {
  w.StartObject();
  for (const auto& [k, v] : params) {
    w.Key(k.c_str());
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
            w.Double(x);
          else
            w.String(x.c_str(), static_cast<rapidjson::SizeType>(x.size()));
        },
        v);
  }
  w.EndObject();
}

}  // namespace

StatusOr<EncodedResponse> EncodeInferResponse(const InferResponse& response,
                                              const OutputEncoding& encoding) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                    rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>
      w(buf);
  w.StartObject();
  if (!response.id.empty()) {
    w.Key("id");
    w.String(response.id.c_str(), static_cast<rapidjson::SizeType>(response.id.size()));
  }
  w.Key("model_name");
  w.String(response.model_name.c_str());
  w.Key("model_version");
  w.String(std::to_string(response.model_version).c_str());
  if (!response.parameters.empty()) {
    w.Key("parameters");
    WriteParameters(w, response.parameters);
  }
  w.Key("outputs");
  w.StartArray();
  size_t blob_bytes = 0;
  std::vector<const InferOutput*> blobs;
  for (const auto& o : response.outputs) {
    w.StartObject();
    w.Key("name");
    w.String(o.name.c_str());
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
        blobs.push_back(&o);
        blob_bytes += o.buffer.size();
      }
    } else {
      w.Key("data");
      INFERD_RETURN_IF_ERROR(WriteData(w, o));
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  EncodedResponse out;
  out.body.reserve(buf.GetSize() + blob_bytes);
  out.body.assign(buf.GetString(), buf.GetSize());
  if (!blobs.empty()) {
    out.header_length = buf.GetSize();
    for (const InferOutput* o : blobs) out.body.append(o->buffer.data(), o->buffer.size());
  }
  return out;
}

}  // namespace inferd::http
