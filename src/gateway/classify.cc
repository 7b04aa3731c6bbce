#include "gateway/classify.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <numeric>

namespace inferd::gateway {

StatusOr<PipelineInfo> PipelineFromMetadata(const inference::ModelMetadataResponse& m) {
  const std::string what = "model '" + m.name() + "' is not an image pipeline: ";
  if (m.inputs_size() != 1 || m.inputs(0).datatype() != "BYTES") {
    return InvalidArgument(what + "it needs exactly one BYTES input (the encoded image)");
  }
  PipelineInfo p;
  p.name = m.name();
  p.input = m.inputs(0).name();
  for (int64_t d : m.inputs(0).shape()) {
    if (d != -1 && d != 1) {
      return InvalidArgument(what + "its input '" + p.input + "' holds more than one element");
    }
    p.input_shape.push_back(1);
  }
  if (p.input_shape.empty()) p.input_shape.push_back(1);
  for (const auto& o : m.outputs()) {
    if (o.datatype() == "FP32") {
      p.output = o.name();
      break;
    }
  }
  if (p.output.empty()) return InvalidArgument(what + "it has no FP32 output (class scores)");
  return p;
}

std::string BytesElement(std::string_view data) {
  std::string out(4 + data.size(), '\0');
  const uint32_t n = static_cast<uint32_t>(data.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  if (!data.empty()) std::memcpy(out.data() + 4, data.data(), data.size());
  return out;
}

inference::ModelInferRequest MakeInferRequest(const PipelineInfo& pipeline,
                                              std::string_view image) {
  inference::ModelInferRequest r;
  r.set_model_name(pipeline.name);
  auto* in = r.add_inputs();
  in->set_name(pipeline.input);
  in->set_datatype("BYTES");
  for (int64_t d : pipeline.input_shape) in->add_shape(d);
  r.add_outputs()->set_name(pipeline.output);
  r.add_raw_input_contents(BytesElement(image));
  return r;
}

inference::ModelInferRequest MakeShmInferRequest(const PipelineInfo& pipeline,
                                                 const std::string& region, uint64_t byte_size) {
  inference::ModelInferRequest r = MakeInferRequest(pipeline, {});
  r.clear_raw_input_contents();
  auto& params = *r.mutable_inputs(0)->mutable_parameters();
  params["shared_memory_region"].set_string_param(region);
  params["shared_memory_offset"].set_int64_param(0);
  params["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(byte_size));
  return r;
}

StatusOr<std::vector<ClassScore>> TopClasses(const PipelineInfo& pipeline,
                                             const inference::ModelInferResponse& response,
                                             uint32_t k, const std::vector<std::string>& labels) {
  int index = -1;
  for (int i = 0; i < response.outputs_size(); ++i) {
    if (response.outputs(i).name() == pipeline.output) index = i;
  }
  if (index < 0 || index >= response.raw_output_contents_size()) {
    return Internal("inferd's answer from '" + pipeline.name + "' lacks output '" +
                    pipeline.output + "'");
  }
  if (response.outputs(index).datatype() != "FP32") {
    return Internal("output '" + pipeline.output + "' of '" + pipeline.name + "' is " +
                    response.outputs(index).datatype() + ", expected FP32");
  }
  const std::string& raw = response.raw_output_contents(index);
  const size_t n = raw.size() / sizeof(float);
  std::vector<float> scores(n);
  if (n > 0) std::memcpy(scores.data(), raw.data(), n * sizeof(float));
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min<size_t>(k, n);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](int64_t a, int64_t b) {
                      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
                    });
  std::vector<ClassScore> out;
  for (size_t i = 0; i < top; ++i) {
    const int64_t c = order[i];
    out.push_back(
        {static_cast<size_t>(c) < labels.size() ? labels[c] : std::to_string(c), scores[c], c});
  }
  return out;
}

std::string ClassesJson(const std::string& model, const std::vector<ClassScore>& classes) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("model");
  w.String(model.c_str(), static_cast<rapidjson::SizeType>(model.size()));
  w.Key("classes");
  w.StartArray();
  for (const auto& c : classes) {
    w.StartObject();
    w.Key("label");
    w.String(c.label.c_str(), static_cast<rapidjson::SizeType>(c.label.size()));
    w.Key("score");
    w.Double(static_cast<double>(c.score));
    w.Key("index");
    w.Int64(c.index);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

Status Labels::Add(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag.size()) {
    return InvalidArgument("--labels wants PIPELINE=FILE, got '" + flag + "'");
  }
  const std::string file = flag.substr(eq + 1);
  std::ifstream in(file);
  if (!in) return InvalidArgument("--labels: cannot read '" + file + "'");
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  labels_[flag.substr(0, eq)] = std::move(labels);
  return Status::Ok();
}

const std::vector<std::string>& Labels::For(const std::string& pipeline) const {
  static const std::vector<std::string> kNone;
  auto it = labels_.find(pipeline);
  return it == labels_.end() ? kNone : it->second;
}

}  // namespace inferd::gateway
