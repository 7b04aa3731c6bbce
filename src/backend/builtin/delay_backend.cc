// delay: OUTPUT0 = INPUT0, after sleeping the model parameter
// `execute_delay_ms` once per execution, whatever the batch size. Makes
// batching observable (and benchmarkable) without hooks. A built-in plugin
// on the C ABI.
//
// `execute_delay_parallel_fraction` p (0..1, default 0) models a CPU model
// that parallelises: with the server's CPU thread hint t (ABI v3; 1 when
// there is none) the sleep is scaled by Amdahl's law, (1-p) + p/t. The
// backend declares INFERD_BACKEND_CAP_CPU_THREAD_HINT, so a delay model with
// no instance count gets the automatic layout (scheduler/instance_layout.h).
//
// `execute_delay_batch_exponent` e (default 0) scales the sleep by rows^e
// (rows: the execution's batch size): 1.0 costs like a CPU (no gain from
// batching), 0.3 like a GPU (time grows sub-linearly with the batch).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
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
  double parallel_fraction = 0;
  double batch_exponent = 0;  // execute_delay_batch_exponent
  bool batched = false;       // requests carry a batch dimension

  explicit DelayModel(const InferdModelInfo& info) {
    if (info.input_count != 1 || info.output_count != 1 ||
        info.inputs[0].datatype != info.outputs[0].datatype) {
      ThrowInvalidArgument("delay model needs one input and one output of the same datatype");
    }
    input = info.inputs[0].name;
    output = info.outputs[0].name;
    delay_ms = IntParameter(info, "execute_delay_ms", 0, 0, 600000);
    if (const char* p = FindParameter(info, "execute_delay_parallel_fraction")) {
      char* end = nullptr;
      parallel_fraction = std::strtod(p, &end);
      if (end == p || *end != '\0' || !(parallel_fraction >= 0 && parallel_fraction <= 1)) {
        ThrowInvalidArgument(
            "parameter 'execute_delay_parallel_fraction' must be a number from 0 to 1");
      }
    }
    batched = info.max_batch_size > 0;
    if (const char* v = FindParameter(info, "execute_delay_batch_exponent"); v && *v) {
      char* end = nullptr;
      batch_exponent = std::strtod(v, &end);
      if (*end != '\0' || !(batch_exponent >= 0 && batch_exponent <= 4)) {
        ThrowInvalidArgument(
            "parameter 'execute_delay_batch_exponent' must be a number from 0 to 4");
      }
    }
  }
  // The sleep for an execution of `rows` rows given `threads` CPU threads
  // (Amdahl's law).
  std::chrono::microseconds Delay(int threads, int64_t rows) const {
    const double scale = (1 - parallel_fraction) + parallel_fraction / std::max(1, threads);
    const double batch = std::pow(static_cast<double>(std::max<int64_t>(1, rows)), batch_exponent);
    return std::chrono::microseconds(
        static_cast<int64_t>(static_cast<double>(delay_ms) * 1000 * scale * batch));
  }
};

struct DelayInstance {
  const DelayModel& model;

  DelayInstance(DelayModel& m, const InferdInstanceInfo&) : model(m) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    if (model.delay_ms > 0) {
      int64_t rows = model.batched ? 0 : n;
      if (model.batched && model.batch_exponent != 0) {
        ForEachRequest(requests, n, [&](const Request& r) {
          InferdTensor in{};
          if (r.FindInput(model.input.c_str(), &in) && in.dims_count > 0) rows += in.shape[0];
        });
      }
      std::this_thread::sleep_for(model.Delay(CpuThreadsHint(requests, n), rows));
    }
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
  return &BackendTable<DelayModel, DelayInstance, INFERD_BACKEND_CAP_CPU_THREAD_HINT>::kApi;
}

}  // namespace inferd
