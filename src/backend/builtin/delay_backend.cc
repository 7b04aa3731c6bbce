// delay: OUTPUT0 = INPUT0, after sleeping the model parameter
// `execute_delay_ms` once per execution, whatever the batch size. Makes
// batching observable (and benchmarkable) without hooks. A built-in plugin
// on the C ABI.
#include <chrono>
#include <cstring>
#include <thread>

#include "backend/builtin/builtin_backends.h"
#include "common/backend_util.h"

namespace inferd {
namespace {

using namespace inferd_backend;

struct DelayModel {
  std::string input, output;
  int64_t delay_ms = 0;

  explicit DelayModel(const InferdModelInfo& info) {
    if (info.input_count != 1 || info.output_count != 1 ||
        info.inputs[0].datatype != info.outputs[0].datatype) {
      ThrowInvalidArgument("delay model needs one input and one output of the same datatype");
    }
    input = info.inputs[0].name;
    output = info.outputs[0].name;
    delay_ms = IntParameter(info, "execute_delay_ms", 0, 0, 600000);
  }
};

struct DelayInstance {
  const DelayModel& model;

  DelayInstance(DelayModel& m, const InferdInstanceInfo&) : model(m) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    if (model.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(model.delay_ms));
    ForEachRequest(requests, n, [&](const Request& r) {
      InferdTensor in{};
      if (!r.FindInput(model.input.c_str(), &in)) {
        ThrowInvalidArgument("delay model needs input '" + model.input + "'");
      }
      void* out =
          r.AllocateOutput(model.output.c_str(), in.datatype,
                           std::vector<int64_t>(in.shape, in.shape + in.dims_count), in.byte_size);
      if (in.byte_size) std::memcpy(out, in.buffer, in.byte_size);
    });
  }
};

}  // namespace

const InferdBackendApi* DelayBackendEntry(uint32_t) {
  return &BackendTable<DelayModel, DelayInstance>::kApi;
}

}  // namespace inferd
