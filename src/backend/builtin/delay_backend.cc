// delay: OUTPUT0 = INPUT0, after sleeping the model parameter
// `execute_delay_ms` once per execution, whatever the batch size. Makes
// batching observable (and benchmarkable) without hooks.
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "backend/builtin/builtin_backends.h"

namespace inferd {
namespace {

class DelayInstance : public BackendInstance {
 public:
  DelayInstance(const ModelSpec* spec, int delay_ms) : spec_(spec), delay_ms_(delay_ms) {}

  void Execute(std::span<ExecutionItem> batch) override {
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    for (auto& item : batch) {
      const InferInput* in = item.request->FindInput(spec_->inputs[0].name);
      if (in == nullptr) {
        item.status = InvalidArgument("delay model needs input '" + spec_->inputs[0].name + "'");
        continue;
      }
      auto& o = item.response->AddOutput(spec_->outputs[0].name, in->datatype, in->shape,
                                         in->data.byte_size);
      if (in->data.byte_size) std::memcpy(o.buffer.data(), in->data.data, in->data.byte_size);
    }
  }

 private:
  const ModelSpec* spec_;
  int delay_ms_;
};

class DelayModel : public BackendModel {
 public:
  DelayModel(const ModelSpec* spec, int delay_ms) : spec_(spec), delay_ms_(delay_ms) {}
  StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo&) override {
    return std::unique_ptr<BackendInstance>(new DelayInstance(spec_, delay_ms_));
  }

 private:
  const ModelSpec* spec_;
  int delay_ms_;
};

class DelayBackend : public Backend {
 public:
  StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) override {
    const ModelSpec& s = *ctx.spec;
    if (s.inputs.size() != 1 || s.outputs.size() != 1 ||
        s.inputs[0].datatype != s.outputs[0].datatype) {
      return InvalidArgument("delay model needs one input and one output of the same datatype");
    }
    int delay = 0;
    if (auto it = s.parameters.find("execute_delay_ms"); it != s.parameters.end()) {
      const std::string& v = it->second;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), delay);
      if (ec != std::errc() || p != v.data() + v.size() || delay < 0 || delay > 600000) {
        return InvalidArgument(
            "parameter 'execute_delay_ms' must be an integer between 0 and "
            "600000, got '" +
            v + "'");
      }
    }
    return std::unique_ptr<BackendModel>(new DelayModel(ctx.spec, delay));
  }
};

}  // namespace

std::shared_ptr<Backend> MakeDelayBackend() { return std::make_shared<DelayBackend>(); }

}  // namespace inferd
