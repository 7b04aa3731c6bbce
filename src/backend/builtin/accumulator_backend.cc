// accumulator: a stateful sequence model. OUTPUT = running sum of INPUT
// over the sequence, per correlation id. It reads the control inputs the
// sequence scheduler delivers (START resets the sum, END forgets it, CORRID
// keys the state), so it proves that they arrive as configured. A built-in
// plugin on the C ABI.
#include <cstring>
#include <map>

#include "backend/builtin/builtin_backends.h"
#include "common/backend_util.h"

namespace inferd {
namespace {

using namespace inferd_backend;

bool ControlIsOn(const Request& r, const std::string& name) {
  InferdTensor t{};
  if (name.empty() || !r.FindInput(name.c_str(), &t) || t.byte_size == 0) return false;
  switch (t.datatype) {
    case INFERD_TYPE_INT32: {
      int32_t v;
      std::memcpy(&v, t.buffer, 4);
      return v != 0;
    }
    case INFERD_TYPE_FP32: {
      float v;
      std::memcpy(&v, t.buffer, 4);
      return v != 0;
    }
    default:
      return static_cast<const char*>(t.buffer)[0] != 0;
  }
}

template <typename T>
void Accumulate(const InferdTensor& in, double& state, char* out) {
  const size_t n = in.byte_size / sizeof(T);
  const char* p = static_cast<const char*>(in.buffer);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    state += static_cast<double>(v);
    const T s = static_cast<T>(state);
    std::memcpy(out + i * sizeof(T), &s, sizeof(T));
  }
}

struct AccumulatorModel {
  std::string input, output;
  std::map<InferdControlKind, std::string> controls;

  explicit AccumulatorModel(const InferdModelInfo& info) {
    if (info.input_count != 1 || info.output_count != 1) {
      ThrowInvalidArgument("accumulator model needs one input and one output");
    }
    const InferdDataType t = info.inputs[0].datatype;
    if ((t != INFERD_TYPE_INT32 && t != INFERD_TYPE_FP32) || info.outputs[0].datatype != t) {
      ThrowInvalidArgument("accumulator supports TYPE_INT32 or TYPE_FP32 input and output");
    }
    for (uint32_t i = 0; i < info.control_count; ++i) {
      controls[info.controls[i].kind] = info.controls[i].name;
    }
    if (!controls.count(INFERD_CONTROL_START) || !controls.count(INFERD_CONTROL_CORRID)) {
      ThrowInvalidArgument("accumulator needs sequence_batching with START and CORRID controls");
    }
    input = info.inputs[0].name;
    output = info.outputs[0].name;
  }
};

struct AccumulatorInstance {
  const AccumulatorModel& model;
  std::map<std::string, double> state;  // correlation id bytes -> running sum

  AccumulatorInstance(AccumulatorModel& m, const InferdInstanceInfo&) : model(m) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    ForEachRequest(requests, n, [&](const Request& r) { One(r); });
  }

  std::string Control(InferdControlKind kind) const {
    auto it = model.controls.find(kind);
    return it == model.controls.end() ? std::string() : it->second;
  }

  void One(const Request& r) {
    InferdTensor corrid{};
    if (!r.FindInput(Control(INFERD_CONTROL_CORRID).c_str(), &corrid)) {
      ThrowInvalidArgument("accumulator: no CORRID control input");
    }
    const std::string key(static_cast<const char*>(corrid.buffer), corrid.byte_size);
    if (ControlIsOn(r, Control(INFERD_CONTROL_START))) state[key] = 0;
    auto it = state.find(key);
    if (it == state.end()) ThrowInvalidArgument("accumulator: sequence has no state");
    InferdTensor in{};
    if (!r.FindInput(model.input.c_str(), &in)) ThrowInvalidArgument("accumulator: missing input");
    char* out = static_cast<char*>(
        r.AllocateOutput(model.output.c_str(), in.datatype,
                         std::vector<int64_t>(in.shape, in.shape + in.dims_count), in.byte_size));
    if (in.datatype == INFERD_TYPE_INT32) {
      Accumulate<int32_t>(in, it->second, out);
    } else {
      Accumulate<float>(in, it->second, out);
    }
    if (ControlIsOn(r, Control(INFERD_CONTROL_END))) state.erase(it);
  }
};

}  // namespace

const InferdBackendApi* AccumulatorBackendEntry(uint32_t) {
  return &BackendTable<AccumulatorModel, AccumulatorInstance>::kApi;
}

}  // namespace inferd
