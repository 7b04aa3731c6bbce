#include "backend/backend_registry.h"

#include "backend/builtin/builtin_backends.h"

namespace inferd {

std::unique_ptr<BackendRegistry> BackendRegistry::WithBuiltins() {
  auto r = std::make_unique<BackendRegistry>();
  r->Register("identity", MakeIdentityBackend());
  r->Register("add_sub", MakeAddSubBackend());
  r->Register("delay", MakeDelayBackend());
  r->Register("accumulator", MakeAccumulatorBackend());
  return r;
}

void BackendRegistry::Register(const std::string& name, std::shared_ptr<Backend> backend) {
  backends_[name] = std::move(backend);
}

StatusOr<std::shared_ptr<Backend>> BackendRegistry::Find(const ModelSpec& spec) const {
  std::string name = spec.backend;
  if (name.empty()) {
    if (spec.platform == "pytorch_libtorch") name = "pytorch";
    if (spec.platform == "onnxruntime_onnx") name = "onnxruntime";
  }
  if (name.empty()) {
    return InvalidArgument("model '" + spec.name + "' names neither a backend nor a platform");
  }
  auto it = backends_.find(name);
  if (it == backends_.end()) {
    return InvalidArgument("no backend named '" + name + "' is available for model '" + spec.name +
                           "'");
  }
  return it->second;
}

}  // namespace inferd
