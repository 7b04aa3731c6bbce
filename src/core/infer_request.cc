#include "core/infer_request.h"

namespace inferd {

const InferInput* InferRequest::FindInput(std::string_view name) const {
  for (const auto& in : inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

InferOutput& InferResponse::AddOutput(std::string name, DataType datatype, Shape shape,
                                      size_t byte_size) {
  auto& out = outputs.emplace_back();
  out.name = std::move(name);
  out.datatype = datatype;
  out.shape = std::move(shape);
  out.buffer = OwnedBuffer(byte_size);
  return out;
}

const InferOutput* InferResponse::FindOutput(std::string_view name) const {
  for (const auto& out : outputs) {
    if (out.name == name) return &out;
  }
  return nullptr;
}

}  // namespace inferd
