#include "batcher/http_convert.h"

#include <charconv>

#include "core/datatype.h"

namespace inferd::batcher {
namespace {

inference::InferParameter ToParameter(const ParameterValue& value) {
  inference::InferParameter p;
  if (const auto* b = std::get_if<bool>(&value)) {
    p.set_bool_param(*b);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    p.set_int64_param(*i);
  } else if (const auto* u = std::get_if<uint64_t>(&value)) {
    p.set_uint64_param(*u);
  } else if (const auto* d = std::get_if<double>(&value)) {
    p.set_double_param(*d);
  } else {
    p.set_string_param(std::get<std::string>(value));
  }
  return p;
}

std::optional<ParameterValue> FromParameter(const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return ParameterValue(p.bool_param());
    case inference::InferParameter::kInt64Param:
      return ParameterValue(p.int64_param());
    case inference::InferParameter::kUint64Param:
      return ParameterValue(p.uint64_param());
    case inference::InferParameter::kDoubleParam:
      return ParameterValue(p.double_param());
    case inference::InferParameter::kStringParam:
      return ParameterValue(p.string_param());
    default:
      return std::nullopt;
  }
}

void CopyParameters(const google::protobuf::Map<std::string, inference::InferParameter>& from,
                    Parameters& to) {
  for (const auto& [key, value] : from) {
    if (auto v = FromParameter(value)) to.emplace(key, std::move(*v));
  }
}

}  // namespace

inference::ModelInferRequest ToModelInferRequest(const InferRequest& request,
                                                 const std::string& version) {
  inference::ModelInferRequest out;
  out.set_model_name(request.model_name);
  out.set_model_version(version);
  out.set_id(request.id);
  for (const auto& [key, value] : request.parameters) {
    if (key == "binary_data_output") continue;
    (*out.mutable_parameters())[key] = ToParameter(value);
  }
  for (const InferInput& input : request.inputs) {
    auto* in = out.add_inputs();
    in->set_name(input.name);
    in->set_datatype(std::string(DataTypeToProtocol(input.datatype)));
    for (int64_t d : input.shape) in->add_shape(d);
    out.add_raw_input_contents(input.data.data, input.data.byte_size);
  }
  for (const RequestedOutput& output : request.outputs) {
    auto* o = out.add_outputs();
    o->set_name(output.name);
    if (output.classification > 0) {
      (*o->mutable_parameters())["classification"].set_int64_param(output.classification);
    }
  }
  return out;
}

StatusOr<std::unique_ptr<InferResponse>> FromModelInferResponse(
    const std::shared_ptr<const inference::ModelInferResponse>& response) {
  auto out = std::make_unique<InferResponse>();
  out->model_name = response->model_name();
  const std::string& v = response->model_version();
  int64_t version = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), version);
  if (!v.empty() && (ec != std::errc() || end != v.data() + v.size())) {
    return Internal("the upstream answered model version '" + v + "', not a number");
  }
  out->model_version = version;
  out->id = response->id();
  CopyParameters(response->parameters(), out->parameters);
  for (int i = 0; i < response->outputs_size(); ++i) {
    const auto& o = response->outputs(i);
    const DataType t = DataTypeFromProtocol(o.datatype());
    if (t == DataType::kInvalid) {
      return Internal("the upstream answered output '" + o.name() + "' with datatype '" +
                      o.datatype() + "'");
    }
    if (i >= response->raw_output_contents_size()) {
      return Internal("the upstream answered output '" + o.name() + "' without raw contents");
    }
    InferOutput output;
    output.name = o.name();
    output.datatype = t;
    output.shape.assign(o.shape().begin(), o.shape().end());
    const std::string& data = response->raw_output_contents(i);
    output.buffer = OwnedBuffer::Shared(response, data.data(), data.size());
    out->outputs.push_back(std::move(output));
  }
  return out;
}

}  // namespace inferd::batcher
