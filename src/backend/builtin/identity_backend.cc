// identity: copies each input to the output at the same position.
#include <cstring>

#include "backend/builtin/builtin_backends.h"

namespace inferd {
namespace {

class IdentityInstance : public BackendInstance {
 public:
  explicit IdentityInstance(const ModelSpec* spec) : spec_(spec) {}

  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) {
      for (size_t i = 0; i < spec_->inputs.size(); ++i) {
        const InferInput* in = item.request->FindInput(spec_->inputs[i].name);
        if (in == nullptr) continue;  // optional input not given: no output
        const TensorSpec& out = spec_->outputs[i];
        auto& o = item.response->AddOutput(out.name, in->datatype, in->shape, in->data.byte_size);
        if (in->data.byte_size) std::memcpy(o.buffer.data(), in->data.data, in->data.byte_size);
      }
    }
  }

 private:
  const ModelSpec* spec_;
};

class IdentityModel : public BackendModel {
 public:
  explicit IdentityModel(const ModelSpec* spec) : spec_(spec) {}
  StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo&) override {
    return std::unique_ptr<BackendInstance>(new IdentityInstance(spec_));
  }

 private:
  const ModelSpec* spec_;
};

class IdentityBackend : public Backend {
 public:
  StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) override {
    const ModelSpec& s = *ctx.spec;
    if (s.inputs.size() != s.outputs.size()) {
      return InvalidArgument("identity model needs as many outputs as inputs, has " +
                             std::to_string(s.inputs.size()) + " inputs and " +
                             std::to_string(s.outputs.size()) + " outputs");
    }
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      if (s.inputs[i].datatype != s.outputs[i].datatype) {
        return InvalidArgument("identity model: output '" + s.outputs[i].name +
                               "' must have the datatype of input '" + s.inputs[i].name + "'");
      }
    }
    return std::unique_ptr<BackendModel>(new IdentityModel(ctx.spec));
  }
};

}  // namespace

std::shared_ptr<Backend> MakeIdentityBackend() { return std::make_shared<IdentityBackend>(); }

}  // namespace inferd
