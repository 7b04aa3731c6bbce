#include "trace/trace_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/bytes_tensor.h"
#include "core/log.h"
#include "core/sanitize.h"

namespace inferd::trace {
namespace {

// The log's JSON escaping: also keeps a request id that is not UTF-8 from
// making the file invalid JSON.
void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  out += JsonEscapeLog(s);
  out.push_back('"');
}

void AppendHeader(std::string& out, const TraceRecord& r) {
  out += "{\"id\":" + std::to_string(r.id) + ",\"model_name\":";
  AppendJsonString(out, r.model_name);
  out += ",\"model_version\":" + std::to_string(r.model_version);
  if (!r.request_id.empty()) {
    out += ",\"request_id\":";
    AppendJsonString(out, r.request_id);
  }
  if (r.parent_id != 0) out += ",\"parent_id\":" + std::to_string(r.parent_id);
  out += "}";
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

template <typename T>
void AppendValues(std::string& out, const char* data, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    if (i) out.push_back(',');
    if constexpr (std::is_floating_point_v<T>) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
      out += buf;
    } else {
      out += std::to_string(v);
    }
  }
}

template <typename Convert>
void AppendHalves(std::string& out, const char* data, size_t count, Convert convert) {
  for (size_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, data + i * 2, 2);
    if (i) out.push_back(',');
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(convert(h)));
    out += buf;
  }
}

std::string FormatValues(DataType t, const BufferView& v) {
  std::string out;
  if (v.memory_type == MemoryType::kGpu) return out;  // not copied off the device
  if (t == DataType::kBytes) {
    auto elements = SplitBytesElements(v.data, v.byte_size);
    if (!elements.ok()) return out;
    for (size_t i = 0; i < elements->size(); ++i) {
      if (i) out.push_back(',');
      out += (*elements)[i];
    }
    return out;
  }
  const size_t size = DataTypeByteSize(t);
  if (size == 0) return out;
  const size_t n = v.byte_size / size;
  switch (t) {
    case DataType::kBool:
    case DataType::kUint8:
      AppendValues<uint8_t>(out, v.data, n);
      break;
    case DataType::kUint16:
      AppendValues<uint16_t>(out, v.data, n);
      break;
    case DataType::kUint32:
      AppendValues<uint32_t>(out, v.data, n);
      break;
    case DataType::kUint64:
      AppendValues<uint64_t>(out, v.data, n);
      break;
    case DataType::kInt8:
      AppendValues<int8_t>(out, v.data, n);
      break;
    case DataType::kInt16:
      AppendValues<int16_t>(out, v.data, n);
      break;
    case DataType::kInt32:
      AppendValues<int32_t>(out, v.data, n);
      break;
    case DataType::kInt64:
      AppendValues<int64_t>(out, v.data, n);
      break;
    case DataType::kFp16:
      AppendHalves(out, v.data, n, HalfToFloat);
      break;
    case DataType::kBf16:
      AppendHalves(out, v.data, n, Bf16ToFloat);
      break;
    case DataType::kFp32:
      AppendValues<float>(out, v.data, n);
      break;
    case DataType::kFp64:
      AppendValues<double>(out, v.data, n);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

std::string EncodeTraceRecord(const TraceRecord& r) {
  std::string out;
  if (!r.started) return out;
  out.reserve(128 + r.timestamps.size() * 64);
  AppendHeader(out, r);
  std::vector<TraceTimestamp> ts = r.timestamps;
  std::stable_sort(ts.begin(), ts.end(),
                   [](const TraceTimestamp& a, const TraceTimestamp& b) { return a.ns < b.ns; });
  const std::string id = std::to_string(r.id);
  for (const auto& t : ts) {
    out += ",{\"id\":" + id + ",\"timestamps\":[{\"name\":\"";
    out += t.name;
    out += "\",\"ns\":" + std::to_string(t.ns) + "}]}";
  }
  for (const auto& t : r.tensors) {
    out += ",{\"id\":" + id + ",\"activity\":\"";
    out += t.activity;
    out += "\",\"tensor\":{\"name\":";
    AppendJsonString(out, t.name);
    out += ",\"data\":";
    AppendJsonString(out, t.data);
    out += ",\"shape\":";
    AppendJsonString(out, t.shape);
    out += ",\"dtype\":";
    AppendJsonString(out, t.datatype);
    out += "}}";
  }
  return out;
}

std::string EncodeTraceGroup(const TraceGroup& group) {
  std::string out = EncodeTraceRecord(group.root);
  for (const auto& c : group.children) {
    std::string child = EncodeTraceRecord(c);
    if (child.empty()) continue;
    if (!out.empty()) out.push_back(',');
    out += child;
  }
  return out;
}

TraceTensor MakeTraceTensor(const char* activity, const std::string& name, DataType datatype,
                            const Shape& shape, const BufferView& data) {
  TraceTensor t;
  t.activity = activity;
  t.name = name;
  t.datatype = std::string(DataTypeToProtocol(datatype));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) t.shape.push_back(',');
    t.shape += std::to_string(shape[i]);
  }
  t.data = FormatValues(datatype, data);
  return t;
}

void TraceInputs(RequestTrace& trace, const char* activity, const InferRequest& request) {
  for (const auto& in : request.inputs) {
    trace.AddTensor(MakeTraceTensor(activity, in.name, in.datatype, in.shape, in.data));
  }
}

void TraceOutputs(RequestTrace& trace, const InferResponse& response) {
  for (const auto& out : response.outputs) {
    trace.AddTensor(MakeTraceTensor(activity::kTensorBackendOutput, out.name, out.datatype,
                                    out.shape, out.buffer.view()));
  }
}

TraceFileWriter::TraceFileWriter(std::string path) : path_(std::move(path)) {}

TraceFileWriter::~TraceFileWriter() { Close(); }

void TraceFileWriter::Failed(const std::string& path) {
  if (warned_) return;
  warned_ = true;
  INFERD_LOG(Error) << "trace file '" << EscapeControl(path)
                    << "' cannot be written: " << std::strerror(errno);
}

void TraceFileWriter::AppendToMain(const std::string& objects) {
  if (main_failed_) return;
  if (main_ == nullptr) {
    main_ = std::fopen(path_.c_str(), "w");
    if (main_ == nullptr) {
      main_failed_ = true;
      return Failed(path_);
    }
    std::fputc('[', main_);
  } else {
    std::fputc(',', main_);
  }
  std::fwrite(objects.data(), 1, objects.size(), main_);
  if (std::fflush(main_) != 0) Failed(path_);
}

void TraceFileWriter::WriteIndexed() {
  const std::string path = path_ + "." + std::to_string(next_index_++);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    Failed(path);
  } else {
    std::fputc('[', f);
    std::fwrite(pending_.data(), 1, pending_.size(), f);
    std::fputc(']', f);
    if (std::fclose(f) != 0) Failed(path);
  }
  pending_.clear();
  pending_traces_ = 0;
}

void TraceFileWriter::Collect(TraceGroup group) {
  const std::string objects = EncodeTraceGroup(group);
  if (objects.empty()) return;
  const uint32_t frequency = group.root.log_frequency;
  MutexLock lock(mu_);
  if (closed_) return;
  ++written_;
  if (frequency == 0) return AppendToMain(objects);
  if (!pending_.empty()) pending_.push_back(',');
  pending_ += objects;
  if (++pending_traces_ >= frequency) WriteIndexed();
}

void TraceFileWriter::Close() {
  MutexLock lock(mu_);
  if (closed_) return;
  closed_ = true;
  if (pending_traces_ > 0) WriteIndexed();
  if (main_ != nullptr) {
    std::fputc(']', main_);
    if (std::fclose(main_) != 0) Failed(path_);
    main_ = nullptr;
  }
}

TraceCollectorStats TraceFileWriter::stats() const {
  TraceCollectorStats s;
  s.traces = traces_written();
  return s;
}

uint64_t TraceFileWriter::traces_written() const {
  MutexLock lock(mu_);
  return written_;
}

}  // namespace inferd::trace
