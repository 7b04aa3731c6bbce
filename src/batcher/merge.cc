#include "batcher/merge.h"

#include <cstring>
#include <map>
#include <optional>

#include "core/datatype.h"

namespace inferd::batcher {
namespace {

using inference::InferParameter;
using inference::ModelInferRequest;
using inference::ModelInferResponse;
using ParameterMap = google::protobuf::Map<std::string, InferParameter>;

constexpr int64_t kMaxElements = int64_t{1} << 40;

void AppendField(std::string& key, std::string_view field) {
  key += std::to_string(field.size());
  key += ':';
  key += field;
}

void AppendParameter(std::string& key, const std::string& name, const InferParameter& p) {
  AppendField(key, name);
  AppendField(key, p.SerializeAsString());
}

// Elements per row (the product of shape[1:]); -1 for a negative dimension
// or a product past kMaxElements.
int64_t InnerElements(const google::protobuf::RepeatedField<int64_t>& shape) {
  int64_t n = 1;
  for (int i = 1; i < shape.size(); ++i) {
    if (shape[i] < 0) return -1;
    if (shape[i] != 0 && n > kMaxElements / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

// The offsets of the element boundaries of a BYTES tensor (4-byte
// little-endian length, then the bytes), element 0 to `count`; false when
// `data` is not exactly `count` elements.
bool BytesOffsets(std::string_view data, int64_t count, std::vector<size_t>* offsets) {
  size_t at = 0;
  if (offsets != nullptr) offsets->push_back(0);
  for (int64_t i = 0; i < count; ++i) {
    if (data.size() - at < 4) return false;
    uint32_t len = 0;
    for (int b = 3; b >= 0; --b) len = (len << 8) | static_cast<unsigned char>(data[at + b]);
    at += 4;
    if (data.size() - at < len) return false;
    at += len;
    if (offsets != nullptr) offsets->push_back(at);
  }
  return at == data.size();
}

// Whether `data` fills `rows` rows of `inner` elements of `datatype`.
bool DataFits(const std::string& datatype, int64_t rows, int64_t inner, std::string_view data) {
  const DataType t = DataTypeFromProtocol(datatype);
  if (t == DataType::kInvalid || (inner != 0 && rows > kMaxElements / inner)) return false;
  const int64_t elements = rows * inner;
  if (t == DataType::kBytes) return BytesOffsets(data, elements, nullptr);
  return static_cast<int64_t>(data.size()) == elements * static_cast<int64_t>(DataTypeByteSize(t));
}

bool IsSharedMemory(const std::string& name) { return name.rfind("shared_memory_", 0) == 0; }

// The reason the request's parameters keep it from merging, if any; else
// adds the ones that change execution to `key`.
std::optional<PassThrough> RequestParameters(const ParameterMap& parameters, std::string& key) {
  std::map<std::string, const InferParameter*> sorted;
  for (const auto& [name, value] : parameters) sorted.emplace(name, &value);
  for (const auto& [name, value] : sorted) {
    if (name == "sequence_id" || name == "sequence_start" || name == "sequence_end") {
      return PassThrough::kSequence;
    }
    if (name != "priority" && name != "timeout") return PassThrough::kParameters;
    AppendParameter(key, name, *value);
  }
  return std::nullopt;
}

std::optional<PassThrough> OutputParameters(const ParameterMap& parameters, std::string& key) {
  std::map<std::string, const InferParameter*> sorted;
  for (const auto& [name, value] : parameters) sorted.emplace(name, &value);
  for (const auto& [name, value] : sorted) {
    if (IsSharedMemory(name)) return PassThrough::kSharedMemory;
    if (name != "classification" && name != "binary_data") return PassThrough::kParameters;
    AppendParameter(key, name, *value);
  }
  return std::nullopt;
}

// Adds the inputs (sorted by name) to `key`; `rows` gets their dim 0.
std::optional<PassThrough> Inputs(const ModelInferRequest& request, std::string& key,
                                  int64_t* rows) {
  for (const auto& input : request.inputs()) {
    for (const auto& entry : input.parameters()) {
      if (IsSharedMemory(entry.first)) return PassThrough::kSharedMemory;
    }
    if (!input.parameters().empty()) return PassThrough::kParameters;
    if (input.has_contents()) return PassThrough::kTypedContents;
  }
  if (request.inputs().empty() || request.raw_input_contents_size() != request.inputs_size()) {
    return PassThrough::kLayout;
  }
  std::map<std::string, int> order;
  for (int i = 0; i < request.inputs_size(); ++i) {
    if (!order.emplace(request.inputs(i).name(), i).second) return PassThrough::kLayout;
  }
  *rows = -1;
  for (const auto& [name, i] : order) {
    const auto& input = request.inputs(i);
    if (input.shape().empty() || input.shape(0) <= 0) return PassThrough::kLayout;
    if (*rows != -1 && input.shape(0) != *rows) return PassThrough::kLayout;
    *rows = input.shape(0);
    const int64_t inner = InnerElements(input.shape());
    if (inner < 0 || !DataFits(input.datatype(), *rows, inner, request.raw_input_contents(i))) {
      return PassThrough::kLayout;
    }
    AppendField(key, name);
    AppendField(key, input.datatype());
    for (int d = 1; d < input.shape_size(); ++d) key += std::to_string(input.shape(d)) + ",";
    key += ';';
  }
  return std::nullopt;
}

}  // namespace

std::string_view PassThroughLabel(PassThrough reason) {
  switch (reason) {
    case PassThrough::kNotBatchable:
      return "not_batchable";
    case PassThrough::kDecoupled:
      return "decoupled";
    case PassThrough::kSequence:
      return "sequence";
    case PassThrough::kSharedMemory:
      return "shared_memory";
    case PassThrough::kTypedContents:
      return "typed_contents";
    case PassThrough::kParameters:
      return "parameters";
    case PassThrough::kLayout:
      return "layout";
    case PassThrough::kTooLarge:
      return "too_large";
  }
  return "unknown";
}

std::variant<std::string, PassThrough> MergeKey(const ModelInferRequest& request,
                                                const ModelInfo& model, int64_t* rows) {
  if (model.decoupled) return PassThrough::kDecoupled;
  if (model.sequence) return PassThrough::kSequence;
  if (model.max_batch_size <= 0) return PassThrough::kNotBatchable;
  std::string key;
  AppendField(key, request.model_name());
  AppendField(key, request.model_version());
  key += "|p";
  if (auto reason = RequestParameters(request.parameters(), key)) return *reason;
  key += "|i";
  int64_t n = 0;
  if (auto reason = Inputs(request, key, &n)) return *reason;
  key += "|o";
  for (const auto& output : request.outputs()) {
    AppendField(key, output.name());
    if (auto reason = OutputParameters(output.parameters(), key)) return *reason;
    key += ';';
  }
  if (n > model.max_batch_size) return PassThrough::kTooLarge;
  *rows = n;
  return key;
}

StatusOr<ModelInferRequest> Merge(const std::vector<const ModelInferRequest*>& requests,
                                  const std::string& id) {
  if (requests.empty()) return Internal("merge: no requests");
  const ModelInferRequest& first = *requests.front();
  ModelInferRequest merged;
  merged.set_model_name(first.model_name());
  merged.set_model_version(first.model_version());
  merged.set_id(id);
  *merged.mutable_parameters() = first.parameters();
  *merged.mutable_outputs() = first.outputs();
  for (int i = 0; i < first.inputs_size(); ++i) {
    const auto& input = first.inputs(i);
    auto* out = merged.add_inputs();
    out->set_name(input.name());
    out->set_datatype(input.datatype());
    *out->mutable_shape() = input.shape();
    std::string* data = merged.add_raw_input_contents();
    int64_t rows = 0;
    for (const ModelInferRequest* r : requests) {
      int j = 0;
      while (j < r->inputs_size() && r->inputs(j).name() != input.name()) ++j;
      if (j == r->inputs_size() || j >= r->raw_input_contents_size() ||
          r->inputs(j).shape_size() == 0) {
        return Internal("merge: a request of the batch has no raw input '" + input.name() + "'");
      }
      rows += r->inputs(j).shape(0);
      data->append(r->raw_input_contents(j));
    }
    out->set_shape(0, rows);
  }
  return merged;
}

namespace {

// Appends the slices of `data` (rows of `inner` elements) for each part
// to its answer's raw_output_contents; INTERNAL naming `name` if the data
// does not fill the shape.
Status SliceOutput(const std::string& name, const std::string& datatype, int64_t inner,
                   const std::string& data, const std::vector<Part>& parts,
                   std::vector<ModelInferResponse>& answers) {
  const DataType t = DataTypeFromProtocol(datatype);
  int64_t total = 0;
  for (const Part& p : parts) total += p.rows;
  if (t == DataType::kInvalid || (inner != 0 && total > kMaxElements / inner)) {
    return Internal("output '" + name + "' has datatype '" + datatype + "' or a shape too large");
  }
  std::vector<size_t> offsets;  // byte offset of each element boundary
  if (t == DataType::kBytes) {
    if (!BytesOffsets(data, total * inner, &offsets)) {
      return Internal("BYTES output '" + name + "' does not hold " + std::to_string(total * inner) +
                      " elements");
    }
  } else if (static_cast<int64_t>(data.size()) !=
             total * inner * static_cast<int64_t>(DataTypeByteSize(t))) {
    return Internal("output '" + name + "' has " + std::to_string(data.size()) +
                    " bytes, not the size of its shape");
  }
  const size_t element = t == DataType::kBytes ? 0 : DataTypeByteSize(t);
  int64_t row = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const int64_t begin_el = row * inner, end_el = (row + parts[k].rows) * inner;
    const size_t begin = element != 0 ? static_cast<size_t>(begin_el) * element
                                      : offsets[static_cast<size_t>(begin_el)];
    const size_t end =
        element != 0 ? static_cast<size_t>(end_el) * element : offsets[static_cast<size_t>(end_el)];
    answers[k].add_raw_output_contents(data.substr(begin, end - begin));
    row += parts[k].rows;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<ModelInferResponse>> Split(const ModelInferResponse& response,
                                                const std::vector<Part>& parts) {
  int64_t total = 0;
  for (const Part& p : parts) total += p.rows;
  std::vector<ModelInferResponse> answers(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    answers[k].set_model_name(response.model_name());
    answers[k].set_model_version(response.model_version());
    answers[k].set_id(parts[k].id);
    *answers[k].mutable_parameters() = response.parameters();
  }
  for (int j = 0; j < response.outputs_size(); ++j) {
    const auto& output = response.outputs(j);
    if (j >= response.raw_output_contents_size()) {
      return Internal("output '" + output.name() + "' came without raw_output_contents");
    }
    if (output.shape().empty() || output.shape(0) != total) {
      return Internal(
          "output '" + output.name() + "' has dim 0 " +
          (output.shape().empty() ? std::string("missing") : std::to_string(output.shape(0))) +
          ", not the batch's " + std::to_string(total) + " rows");
    }
    const int64_t inner = InnerElements(output.shape());
    if (inner < 0) return Internal("output '" + output.name() + "' has a bad shape");
    Status s = SliceOutput(output.name(), output.datatype(), inner, response.raw_output_contents(j),
                           parts, answers);
    if (!s.ok()) return s;
    for (size_t k = 0; k < parts.size(); ++k) {
      auto* out = answers[k].add_outputs();
      out->set_name(output.name());
      out->set_datatype(output.datatype());
      *out->mutable_shape() = output.shape();
      out->set_shape(0, parts[k].rows);
      *out->mutable_parameters() = output.parameters();
    }
  }
  return answers;
}

}  // namespace inferd::batcher
