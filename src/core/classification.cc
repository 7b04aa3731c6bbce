#include "core/classification.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>

#include "core/bytes_tensor.h"

namespace inferd {
namespace {

constexpr int64_t kMaxEntryElements = 1000000;

template <typename T>
void ClassifyTyped(const char* data, int64_t entries, int64_t per_entry, uint32_t k,
                   const std::vector<std::string>& labels, std::string& out) {
  std::vector<int64_t> order(static_cast<size_t>(per_entry));
  std::vector<T> values(static_cast<size_t>(per_entry));
  for (int64_t e = 0; e < entries; ++e) {
    std::memcpy(values.data(), data + e * per_entry * static_cast<int64_t>(sizeof(T)),
                static_cast<size_t>(per_entry) * sizeof(T));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return values[a] > values[b]; });
    for (uint32_t i = 0; i < k; ++i) {
      const int64_t idx = order[i];
      std::string s;
      if constexpr (sizeof(T) == 1) {
        s = std::to_string(static_cast<int>(values[idx]));  // 8-bit types print as numbers
      } else {
        s = std::to_string(values[idx]);
      }
      s += ":" + std::to_string(idx);
      if (static_cast<size_t>(idx) < labels.size() && !labels[idx].empty()) {
        s += ":" + labels[idx];
      }
      AppendBytesElement(out, s);
    }
  }
}

}  // namespace

Status LoadClassificationLabels(ModelSpec& spec, const std::string& model_dir) {
  for (auto& out : spec.outputs) {
    out.labels.clear();
    if (out.label_filename.empty()) continue;
    const std::string path = model_dir + "/" + out.label_filename;
    std::ifstream f(path);
    if (!f) {
      return InvalidArgument("output '" + out.name + "': cannot read label file '" + path + "'");
    }
    std::string line;
    while (std::getline(f, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      out.labels.push_back(line);
    }
  }
  return Status::Ok();
}

StatusOr<InferOutput> Classify(const InferOutput& output, uint32_t k, bool batched,
                               const std::vector<std::string>& labels) {
  const DataType t = output.datatype;
  switch (t) {
    case DataType::kBool:
    case DataType::kFp16:
    case DataType::kBf16:
    case DataType::kBytes:
    case DataType::kInvalid:
      return InvalidArgument("class result not available for output due to unsupported type '" +
                             std::string(DataTypeToProtocol(t)) + "'");
    default:
      break;
  }
  const auto count = ElementCount(output.shape);
  if (!count) return InvalidArgument("classification: invalid output shape");
  int64_t entries = 1;
  int64_t per_entry = *count;
  Shape result_shape;
  if (batched && !output.shape.empty()) {
    entries = output.shape[0];
    per_entry = ElementCount(std::span(output.shape).subspan(1)).value_or(0);
    result_shape.push_back(entries);
  }
  if (per_entry > kMaxEntryElements) {
    return InvalidArgument("classification output tensor too large");
  }
  if (static_cast<uint64_t>(entries * per_entry) * DataTypeByteSize(t) != output.buffer.size()) {
    return Internal("classification: output byte size does not match its shape");
  }
  const uint32_t kept = static_cast<uint32_t>(std::min<int64_t>(k, per_entry));
  result_shape.push_back(kept);
  std::string bytes;
  const char* data = output.buffer.data();
  switch (t) {
    case DataType::kUint8:
      ClassifyTyped<uint8_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kUint16:
      ClassifyTyped<uint16_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kUint32:
      ClassifyTyped<uint32_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kUint64:
      ClassifyTyped<uint64_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kInt8:
      ClassifyTyped<int8_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kInt16:
      ClassifyTyped<int16_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kInt32:
      ClassifyTyped<int32_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kInt64:
      ClassifyTyped<int64_t>(data, entries, per_entry, kept, labels, bytes);
      break;
    case DataType::kFp32:
      ClassifyTyped<float>(data, entries, per_entry, kept, labels, bytes);
      break;
    default:
      ClassifyTyped<double>(data, entries, per_entry, kept, labels, bytes);
      break;
  }
  InferOutput result;
  result.name = output.name;
  result.datatype = DataType::kBytes;
  result.shape = std::move(result_shape);
  result.buffer = OwnedBuffer(bytes.size());
  if (!bytes.empty()) std::memcpy(result.buffer.data(), bytes.data(), bytes.size());
  return result;
}

Status ApplyClassification(const ModelSpec& spec, const InferRequest& request,
                           InferResponse& response) {
  for (const auto& wanted : request.outputs) {
    if (wanted.classification == 0) continue;
    for (auto& out : response.outputs) {
      if (out.name != wanted.name) continue;
      const TensorSpec* ts = spec.FindOutput(out.name);
      static const std::vector<std::string> kNoLabels;
      auto classified = Classify(out, wanted.classification, spec.max_batch_size > 0,
                                 ts ? ts->labels : kNoLabels);
      if (!classified.ok()) return classified.status().WithPrefix("output '" + out.name + "'");
      out = std::move(*classified);
    }
  }
  return Status::Ok();
}

}  // namespace inferd
