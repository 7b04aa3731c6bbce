#include "grpc_convert.h"

#include <cstring>

namespace inferd::client::detail {
namespace {

void SetParam(google::protobuf::Map<std::string, inference::InferParameter>& m,
              const std::string& key, int64_t v) {
  m[key].set_int64_param(v);
}

void SetShm(google::protobuf::Map<std::string, inference::InferParameter>& m,
            const std::string& region, size_t offset, size_t size) {
  m["shared_memory_region"].set_string_param(region);
  m["shared_memory_offset"].set_int64_param(int64_t(offset));
  m["shared_memory_byte_size"].set_int64_param(int64_t(size));
}

template <typename T, typename Field>
void AppendAll(const Field& f, std::string& out) {
  for (const auto& v : f) {
    const T x = static_cast<T>(v);
    out.append(reinterpret_cast<const char*>(&x), sizeof(T));
  }
}

// Typed contents to the binary form of `dt`.
void ContentsToBytes(const inference::InferTensorContents& c, const std::string& dt,
                     std::string& out) {
  if (dt == "BOOL")
    AppendAll<uint8_t>(c.bool_contents(), out);
  else if (dt == "INT8")
    AppendAll<int8_t>(c.int_contents(), out);
  else if (dt == "INT16")
    AppendAll<int16_t>(c.int_contents(), out);
  else if (dt == "INT32")
    AppendAll<int32_t>(c.int_contents(), out);
  else if (dt == "INT64")
    AppendAll<int64_t>(c.int64_contents(), out);
  else if (dt == "UINT8")
    AppendAll<uint8_t>(c.uint_contents(), out);
  else if (dt == "UINT16")
    AppendAll<uint16_t>(c.uint_contents(), out);
  else if (dt == "UINT32")
    AppendAll<uint32_t>(c.uint_contents(), out);
  else if (dt == "UINT64")
    AppendAll<uint64_t>(c.uint64_contents(), out);
  else if (dt == "FP32")
    AppendAll<float>(c.fp32_contents(), out);
  else if (dt == "FP64")
    AppendAll<double>(c.fp64_contents(), out);
  else if (dt == "BYTES") {
    for (const auto& s : c.bytes_contents()) {
      const uint32_t len = uint32_t(s.size());
      out.append(reinterpret_cast<const char*>(&len), 4);
      out.append(s);
    }
  }
}

}  // namespace

void ToProto(const InferRequest& in, inference::ModelInferRequest& out) {
  out.set_model_name(in.model);
  out.set_model_version(in.version);
  out.set_id(in.id);
  auto& params = *out.mutable_parameters();
  if (in.sequence_id != 0) {
    params["sequence_id"].set_uint64_param(in.sequence_id);
    params["sequence_start"].set_bool_param(in.sequence_start);
    params["sequence_end"].set_bool_param(in.sequence_end);
  }
  if (in.priority != 0) SetParam(params, "priority", in.priority);
  if (in.timeout_us != 0) SetParam(params, "timeout", in.timeout_us);
  bool any_shm = false;
  for (const auto& t : in.inputs) any_shm = any_shm || !t.shm_region.empty();
  for (const auto& t : in.inputs) {
    auto* tin = out.add_inputs();
    tin->set_name(t.name);
    tin->set_datatype(t.datatype);
    for (int64_t d : t.shape) tin->add_shape(d);
    if (!t.shm_region.empty()) {
      SetShm(*tin->mutable_parameters(), t.shm_region, t.shm_offset, t.shm_byte_size);
    } else if (any_shm) {
      // raw_input_contents must cover every input when used at all, so
      // with shared-memory inputs the others travel as typed contents.
      auto* c = tin->mutable_contents();
      const std::string& dt = t.datatype;
      const size_t es = ElementSize(dt);
      for (size_t i = 0; es && i + es <= t.data.size(); i += es) {
        const char* p = t.data.data() + i;
        auto load = [&](auto v) {
          std::memcpy(&v, p, sizeof(v));
          return v;
        };
        if (dt == "BOOL")
          c->add_bool_contents(p[0] != 0);
        else if (dt == "INT8")
          c->add_int_contents(load(int8_t{}));
        else if (dt == "INT16")
          c->add_int_contents(load(int16_t{}));
        else if (dt == "INT32")
          c->add_int_contents(load(int32_t{}));
        else if (dt == "INT64")
          c->add_int64_contents(load(int64_t{}));
        else if (dt == "UINT8")
          c->add_uint_contents(load(uint8_t{}));
        else if (dt == "UINT16")
          c->add_uint_contents(load(uint16_t{}));
        else if (dt == "UINT32")
          c->add_uint_contents(load(uint32_t{}));
        else if (dt == "UINT64")
          c->add_uint64_contents(load(uint64_t{}));
        else if (dt == "FP32")
          c->add_fp32_contents(load(float{}));
        else if (dt == "FP64")
          c->add_fp64_contents(load(double{}));
      }
      if (dt == "BYTES")
        if (auto s = t.ToStrings())
          for (const auto& e : *s) c->add_bytes_contents(e);
    } else {
      out.add_raw_input_contents(t.data);
    }
  }
  for (const auto& o : in.outputs) {
    auto* ro = out.add_outputs();
    ro->set_name(o.name);
    if (o.class_count > 0) SetParam(*ro->mutable_parameters(), "classification", o.class_count);
    if (!o.shm_region.empty())
      SetShm(*ro->mutable_parameters(), o.shm_region, o.shm_offset, o.shm_byte_size);
  }
}

ClientStatus FromProto(const inference::ModelInferResponse& in, InferResult& out) {
  out.model_name = in.model_name();
  out.model_version = in.model_version();
  out.id = in.id();
  out.outputs.clear();
  const bool raw = in.raw_output_contents_size() > 0;
  if (raw && in.raw_output_contents_size() != in.outputs_size()) {
    return ClientStatus::Error("the response has " + std::to_string(in.outputs_size()) +
                               " outputs but " + std::to_string(in.raw_output_contents_size()) +
                               " raw contents");
  }
  for (int i = 0; i < in.outputs_size(); ++i) {
    const auto& o = in.outputs(i);
    Tensor t;
    t.name = o.name();
    t.datatype = o.datatype();
    t.shape.assign(o.shape().begin(), o.shape().end());
    if (raw)
      t.data = in.raw_output_contents(i);
    else
      ContentsToBytes(o.contents(), t.datatype, t.data);
    out.outputs.push_back(std::move(t));
  }
  return {};
}

std::string StatusText(const grpc::Status& s) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int code = int(s.error_code());
  const std::string name = code >= 0 && code <= 16 ? kNames[code] : std::to_string(code);
  return "gRPC " + name + ": " + s.error_message();
}

}  // namespace inferd::client::detail
