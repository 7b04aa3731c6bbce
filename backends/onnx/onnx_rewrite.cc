#include "onnx/onnx_rewrite.h"

#include <map>
#include <set>
#include <stdexcept>

#include "onnx_graph.pb.h"

namespace inferd_onnx_backend {

RewriteResult RemoveIdentityNodes(const std::string& onnx_bytes) {
  inferd_onnx::ModelProto model;
  if (!model.ParseFromString(onnx_bytes) || !model.has_graph()) {
    throw std::runtime_error("not an ONNX model (no graph)");
  }
  inferd_onnx::GraphProto* graph = model.mutable_graph();
  std::set<std::string> graph_outputs;
  for (const auto& o : graph->output()) graph_outputs.insert(o.name());

  // Identity output -> its input, followed to the end of chains.
  std::map<std::string, std::string> alias;
  for (const auto& n : graph->node()) {
    const bool identity =
        n.op_type() == "Identity" && (n.domain().empty() || n.domain() == "ai.onnx");
    if (identity && n.input_size() == 1 && n.output_size() == 1 &&
        !graph_outputs.count(n.output(0))) {
      alias[n.output(0)] = n.input(0);
    }
  }
  RewriteResult result;
  if (alias.empty()) {
    result.model = onnx_bytes;
    return result;
  }
  auto resolve = [&](std::string name) {
    for (size_t hops = 0; hops <= alias.size(); ++hops) {
      auto it = alias.find(name);
      if (it == alias.end()) return name;
      name = it->second;
    }
    throw std::runtime_error("cycle of Identity nodes");
  };
  google::protobuf::RepeatedPtrField<inferd_onnx::NodeProto> kept;
  for (auto& n : *graph->mutable_node()) {
    if (n.op_type() == "Identity" && n.output_size() == 1 && alias.count(n.output(0))) {
      ++result.identities_removed;
      continue;
    }
    for (auto& in : *n.mutable_input()) {
      if (!in.empty()) in = resolve(in);
    }
    *kept.Add() = std::move(n);
  }
  graph->mutable_node()->Swap(&kept);
  // Type annotations of the removed values would name nothing now.
  google::protobuf::RepeatedPtrField<inferd_onnx::ValueInfoProto> infos;
  for (auto& v : *graph->mutable_value_info()) {
    if (!alias.count(v.name())) *infos.Add() = std::move(v);
  }
  graph->mutable_value_info()->Swap(&infos);
  if (!model.SerializeToString(&result.model)) {
    throw std::runtime_error("cannot serialise the rewritten ONNX model");
  }
  return result;
}

}  // namespace inferd_onnx_backend
