// bls_relay: a test backend that calls another model of the server (ABI v2
// infer_*) and relays every response of the call as its own (a decoupled
// model: response factories). The callee is the model parameter `callee`;
// each request's inputs and requested outputs are passed on unchanged, and
// an error of the call becomes the request's error. Tests load it (from the
// test backend directory) to check calls into the server end to end, with a
// decoupled callee (repeat_int32) and a failing one.
//
// Calls outstanding are counted; the model's finalize waits for the last
// FINAL, so no callback outlives the model.
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "common/backend_util.h"

namespace {

using namespace inferd_backend;

struct RelayModel {
  std::string callee;
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;  // guarded by mu

  explicit RelayModel(const InferdModelInfo& info) {
    const char* c = FindParameter(info, "callee");
    if (c == nullptr || *c == '\0') ThrowInvalidArgument("bls_relay needs parameter 'callee'");
    if (!info.decoupled) ThrowInvalidArgument("bls_relay needs a decoupled model");
    callee = c;
  }
  ~RelayModel() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return calls == 0; });
  }
};

// One relayed request: the factory its answers go through.
struct Relay {
  RelayModel* model;
  InferdResponseFactory* factory;
};

// Copies a received response's outputs into a new response of `factory`.
InferdError* Copy(InferdResponseFactory* factory, const InferdResponse* from) {
  InferdResponse* to = nullptr;
  if (InferdError* e = Host().response_new(factory, &to)) return e;
  for (uint32_t i = 0; i < Host().response_output_count(from); ++i) {
    InferdTensor t{};
    InferdError* e = Host().response_output(from, i, &t);
    void* buffer = nullptr;
    if (e == nullptr) {
      e = Host().response_output_alloc(to, t.name, t.datatype, t.shape, t.dims_count, t.byte_size,
                                       nullptr, nullptr, &buffer);
    }
    if (e != nullptr) {
      Host().response_delete(to);
      return e;
    }
    if (t.byte_size) std::memcpy(buffer, t.buffer, t.byte_size);
  }
  return Host().response_send(factory, to, 0, nullptr);
}

void OnResponse(void* user, InferdResponse* response, InferdError* error, uint32_t flags) {
  auto* relay = static_cast<Relay*>(user);
  if (response != nullptr) {
    InferdError* e = Copy(relay->factory, response);
    Host().response_delete(response);
    if (e != nullptr && error == nullptr) {
      error = e;
    } else if (e != nullptr) {
      Host().error_delete(e);
    }
  }
  if (error != nullptr) {
    InferdError* e = Host().response_send(relay->factory, nullptr, INFERD_RESPONSE_FINAL, error);
    if (e != nullptr) Host().error_delete(e);  // FINAL was sent already
  } else if (flags & INFERD_RESPONSE_FINAL) {
    InferdError* e = Host().response_send(relay->factory, nullptr, INFERD_RESPONSE_FINAL, nullptr);
    if (e != nullptr) Host().error_delete(e);
  }
  if (!(flags & INFERD_RESPONSE_FINAL)) return;
  Host().response_factory_delete(relay->factory);
  RelayModel* model = relay->model;
  delete relay;
  std::lock_guard<std::mutex> lock(model->mu);
  --model->calls;
  model->cv.notify_all();  // under the lock: the model may go once it is released
}

struct RelayInstance {
  RelayModel& model;
  RelayInstance(RelayModel& m, const InferdInstanceInfo&) : model(m) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    ForEachRequest(requests, n, [&](const Request& r) {
      InferdInferCall* call = nullptr;
      ThrowIfError(Host().infer_new(model.callee.c_str(), -1, &call));
      InferdError* e = Host().infer_set_id(call, Host().request_id(r.get()));
      for (uint32_t i = 0; e == nullptr && i < Host().request_input_count(r.get()); ++i) {
        InferdTensor t{};
        e = Host().request_input(r.get(), i, &t);
        if (e == nullptr) {
          e = Host().infer_add_input(call, t.name, t.datatype, t.shape, t.dims_count, t.buffer,
                                     t.byte_size);
        }
      }
      for (uint32_t i = 0; e == nullptr && i < Host().request_output_name_count(r.get()); ++i) {
        e = Host().infer_add_requested_output(call, Host().request_output_name(r.get(), i));
      }
      if (e != nullptr) {
        Host().infer_delete(call);
        ThrowIfError(e);
      }
      InferdResponseFactory* factory = nullptr;
      if ((e = Host().response_factory_new(r.get(), &factory)) != nullptr) {
        Host().infer_delete(call);
        ThrowIfError(e);
      }
      {
        std::lock_guard<std::mutex> lock(model.mu);
        ++model.calls;
      }
      auto* relay = new Relay{&model, factory};
      if ((e = Host().infer_start(call, OnResponse, relay)) != nullptr) {
        OnResponse(relay, nullptr, e, INFERD_RESPONSE_FINAL);  // the callback never runs
      }
    });
  }
};

}  // namespace

extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t) {
  return &BackendTable<RelayModel, RelayInstance>::kApi;
}
