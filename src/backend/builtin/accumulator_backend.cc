// accumulator: a stateful sequence model. OUTPUT = running sum of INPUT
// over the sequence, per correlation id. It reads the control inputs the
// sequence scheduler delivers (START resets the sum, END forgets it, CORRID
// keys the state), so it proves that they arrive as configured.
#include <cstring>
#include <map>

#include "backend/builtin/builtin_backends.h"

namespace inferd {
namespace {

bool ControlIsOn(const InferInput* in) {
  if (in == nullptr || in->data.byte_size == 0) return false;
  switch (in->datatype) {
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, in->data.data, 4);
      return v != 0;
    }
    case DataType::kFp32: {
      float v;
      std::memcpy(&v, in->data.data, 4);
      return v != 0;
    }
    default:
      return in->data.data[0] != 0;
  }
}

template <typename T>
void Accumulate(const InferInput& in, double& state, char* out) {
  const size_t n = in.data.byte_size / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, in.data.data + i * sizeof(T), sizeof(T));
    state += static_cast<double>(v);
    const T s = static_cast<T>(state);
    std::memcpy(out + i * sizeof(T), &s, sizeof(T));
  }
}

class AccumulatorInstance : public BackendInstance {
 public:
  explicit AccumulatorInstance(const ModelSpec* spec) : spec_(spec) {
    for (const auto& c : spec->sequence_controls) names_[c.kind] = c.name;
  }

  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) item.status = One(*item.request, *item.response);
  }

 private:
  Status One(const InferRequest& req, InferResponse& resp) {
    const InferInput* corrid = req.FindInput(names_[ControlKind::kCorrelationId]);
    if (corrid == nullptr) return InvalidArgument("accumulator: no CORRID control input");
    const std::string key(corrid->data.data, corrid->data.byte_size);
    if (ControlIsOn(req.FindInput(names_[ControlKind::kStart]))) state_[key] = 0;
    auto it = state_.find(key);
    if (it == state_.end()) return InvalidArgument("accumulator: sequence has no state");
    const InferInput* in = req.FindInput(spec_->inputs[0].name);
    if (in == nullptr) return InvalidArgument("accumulator: missing input");
    auto& out = resp.AddOutput(spec_->outputs[0].name, in->datatype, in->shape, in->data.byte_size);
    if (in->datatype == DataType::kInt32) {
      Accumulate<int32_t>(*in, it->second, out.buffer.data());
    } else {
      Accumulate<float>(*in, it->second, out.buffer.data());
    }
    if (ControlIsOn(req.FindInput(names_[ControlKind::kEnd]))) state_.erase(it);
    return Status::Ok();
  }

  const ModelSpec* spec_;
  std::map<ControlKind, std::string> names_;
  std::map<std::string, double> state_;  // correlation id bytes -> running sum
};

class AccumulatorModel : public BackendModel {
 public:
  explicit AccumulatorModel(const ModelSpec* spec) : spec_(spec) {}
  StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo&) override {
    return std::unique_ptr<BackendInstance>(new AccumulatorInstance(spec_));
  }

 private:
  const ModelSpec* spec_;
};

class AccumulatorBackend : public Backend {
 public:
  StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) override {
    const ModelSpec& s = *ctx.spec;
    if (s.inputs.size() != 1 || s.outputs.size() != 1) {
      return InvalidArgument("accumulator model needs one input and one output");
    }
    const DataType t = s.inputs[0].datatype;
    if ((t != DataType::kInt32 && t != DataType::kFp32) || s.outputs[0].datatype != t) {
      return InvalidArgument("accumulator supports TYPE_INT32 or TYPE_FP32 input and output");
    }
    bool start = false, corrid = false;
    for (const auto& c : s.sequence_controls) {
      start = start || c.kind == ControlKind::kStart;
      corrid = corrid || c.kind == ControlKind::kCorrelationId;
    }
    if (!start || !corrid) {
      return InvalidArgument("accumulator needs sequence_batching with START and CORRID controls");
    }
    return std::unique_ptr<BackendModel>(new AccumulatorModel(ctx.spec));
  }
};

}  // namespace

std::shared_ptr<Backend> MakeAccumulatorBackend() { return std::make_shared<AccumulatorBackend>(); }

}  // namespace inferd
