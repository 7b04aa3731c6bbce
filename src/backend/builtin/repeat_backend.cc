// repeat: a decoupled model with the signature of Triton's `repeat` example
// backend (repeat_int32: inputs IN INT32 [-1], DELAY UINT32 [-1], WAIT
// UINT32 [1]; outputs OUT INT32 [1], IDX UINT32 [1]). Each request gets one
// response per element e of IN, {OUT=[IN[e]], IDX=[e]}, DELAY[e] ms after
// the previous one, then FINAL alone. Execute sleeps WAIT ms and returns
// while the responses are still coming, so one instance overlaps many
// requests. A built-in plugin on ABI v2 (response factories).
//
// Threads: one worker per request, detached; the model counts them and its
// finalize (unload, shutdown) asks them to stop and waits until the last has
// sent its FINAL, so none outlives the model. A worker stops early, and
// still sends FINAL, when the client has gone away (cancellation).
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "backend/builtin/builtin_backends.h"
#include "common/backend_util.h"

namespace inferd {
namespace {

using namespace inferd_backend;

void CheckTensor(const InferdTensorSpec& t, const char* which, const char* name,
                 InferdDataType type, const std::vector<int64_t>& dims) {
  if (std::strcmp(t.name, name) != 0) {
    ThrowInvalidArgument(std::string("expected ") + which + " tensor name to be " + name +
                         ", got " + t.name);
  }
  if (t.datatype != type) {
    ThrowInvalidArgument(std::string("expected ") + name + " datatype to be " + TypeName(type) +
                         ", got " + TypeName(t.datatype));
  }
  if (std::vector<int64_t>(t.dims, t.dims + t.dims_count) != dims) {
    ThrowInvalidArgument(std::string("expected ") + name + " shape to be " + ShapeString(dims) +
                         ", got " + ShapeString(t.dims, t.dims_count));
  }
}

struct RepeatModel {
  std::mutex mu;
  std::condition_variable cv;
  int workers = 0;        // guarded by mu
  bool stopping = false;  // guarded by mu

  explicit RepeatModel(const InferdModelInfo& info) {
    if (!info.decoupled) {
      ThrowInvalidArgument(
          "repeat backend needs a decoupled model (model_transaction_policy { decoupled: true })");
    }
    if (info.max_batch_size != 0) {
      ThrowInvalidArgument("repeat backend does not support batching: max_batch_size must be 0");
    }
    if (info.input_count != 3) ThrowInvalidArgument("expected 3 inputs (IN, DELAY, WAIT)");
    if (info.output_count != 2) ThrowInvalidArgument("expected 2 outputs (OUT, IDX)");
    CheckTensor(info.inputs[0], "first input", "IN", INFERD_TYPE_INT32, {-1});
    CheckTensor(info.inputs[1], "second input", "DELAY", INFERD_TYPE_UINT32, {-1});
    CheckTensor(info.inputs[2], "third input", "WAIT", INFERD_TYPE_UINT32, {1});
    CheckTensor(info.outputs[0], "first output", "OUT", INFERD_TYPE_INT32, {1});
    CheckTensor(info.outputs[1], "second output", "IDX", INFERD_TYPE_UINT32, {1});
  }

  ~RepeatModel() {
    std::unique_lock<std::mutex> lock(mu);
    stopping = true;
    cv.notify_all();
    cv.wait(lock, [&] { return workers == 0; });
  }

  // Sleeps `ms` unless the model stops or the request is cancelled first;
  // false if it should stop.
  bool Sleep(uint32_t ms, InferdResponseFactory* factory) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (stopping || Host().response_factory_is_cancelled(factory)) return false;
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) return true;
      // Cancellation is a flag, not a signal: looked at every 10 ms.
      cv.wait_for(lock, std::min<std::chrono::steady_clock::duration>(
                            until - now, std::chrono::milliseconds(10)));
    }
  }

  void Work(std::vector<int32_t> in, std::vector<uint32_t> delay, InferdResponseFactory* factory) {
    for (size_t e = 0; e < in.size(); ++e) {
      if (!Sleep(delay[e], factory)) break;
      if (!SendElement(factory, in[e], static_cast<uint32_t>(e))) break;
    }
    InferdError* err = Host().response_send(factory, nullptr, INFERD_RESPONSE_FINAL, nullptr);
    if (err != nullptr) Host().error_delete(err);
    Host().response_factory_delete(factory);
    std::lock_guard<std::mutex> lock(mu);
    --workers;
    cv.notify_all();  // under the lock: the model may be destroyed once it is released
  }

  bool SendElement(InferdResponseFactory* factory, int32_t value, uint32_t index) {
    InferdError* err = Guard([&] {
      InferdResponse* response = nullptr;
      ThrowIfError(Host().response_new(factory, &response));
      const int64_t shape[1] = {1};
      auto put = [&](const char* name, InferdDataType type, const void* v) {
        InferdMemoryType memory = INFERD_MEMORY_CPU;
        int64_t device = 0;
        void* buffer = nullptr;
        InferdError* e = Host().response_output_alloc(response, name, type, shape, 1, 4, &memory,
                                                      &device, &buffer);
        if (e != nullptr) Host().response_delete(response);
        ThrowIfError(e);
        std::memcpy(buffer, v, 4);
      };
      put("OUT", INFERD_TYPE_INT32, &value);
      put("IDX", INFERD_TYPE_UINT32, &index);
      ThrowIfError(Host().response_send(factory, response, 0, nullptr));
    });
    if (err == nullptr) return true;
    Host().log(INFERD_LOG_WARNING,
               (std::string("repeat: a response could not be sent: ") + Host().error_message(err))
                   .c_str());
    Host().error_delete(err);
    return false;
  }
};

std::vector<int64_t> Dims(const InferdTensor& t) {
  return std::vector<int64_t>(t.shape, t.shape + t.dims_count);
}

struct RepeatInstance {
  RepeatModel& model;

  RepeatInstance(RepeatModel& m, const InferdInstanceInfo&) : model(m) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    if (n != 1) {
      Fail(INFERD_ERROR_UNIMPLEMENTED, "repeat backend does not support batched request execution");
    }
    uint32_t wait_ms = 0;
    ForEachRequest(requests, n, [&](const Request& r) {
      const InferdTensor in = r.Input("IN");
      const InferdTensor delay = r.Input("DELAY");
      const InferdTensor wait = r.Input("WAIT");
      if (wait.byte_size != 4) ThrowInvalidArgument("unexpected size for WAIT input");
      if (Dims(in) != Dims(delay)) {
        ThrowInvalidArgument("expected IN and DELAY shape to match, got " + ShapeString(Dims(in)) +
                             " and " + ShapeString(Dims(delay)));
      }
      std::memcpy(&wait_ms, wait.buffer, 4);
      std::vector<int32_t> values(in.byte_size / 4);
      std::vector<uint32_t> delays(delay.byte_size / 4);
      if (!values.empty()) std::memcpy(values.data(), in.buffer, values.size() * 4);
      if (!delays.empty()) std::memcpy(delays.data(), delay.buffer, delays.size() * 4);
      if (values.size() != delays.size()) {
        ThrowInvalidArgument("IN and DELAY hold different element counts");
      }
      InferdResponseFactory* factory = nullptr;
      ThrowIfError(Host().response_factory_new(r.get(), &factory));
      {
        std::lock_guard<std::mutex> lock(model.mu);
        ++model.workers;
      }
      try {
        std::thread([m = &model, v = std::move(values), d = std::move(delays), factory]() mutable {
          m->Work(std::move(v), std::move(d), factory);
        }).detach();
      } catch (...) {
        std::lock_guard<std::mutex> lock(model.mu);
        --model.workers;
        Host().response_factory_delete(factory);  // finishes the request with INTERNAL
        throw;
      }
    });
    // Release the request only after WAIT, as Triton's backend does.
    if (wait_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
};

}  // namespace

const InferdBackendApi* RepeatBackendEntry(uint32_t) {
  return &BackendTable<RepeatModel, RepeatInstance>::kApi;
}

}  // namespace inferd
