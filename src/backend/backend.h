// The internal backend interface: what the core calls to load a model and
// run batches on its instances. Every backend, built-in or shared library,
// is a plugin behind the C ABI of include/inferd/backend.h; the adapter in
// backend/plugin_backend.h turns it into this interface.
//
// Lifecycle: Backend::LoadModel -> BackendModel::CreateInstance (once per
// instance) -> BackendInstance::Execute (many times) -> destruction in the
// reverse order.
//
// Threading: an instance's Execute is only ever called from that instance's
// own thread and never concurrently with itself. Different instances of one
// model run at the same time, so BackendModel must be safe to share between
// them once loaded.
//
// Errors: load/create failures return a Status naming the problem; a failure
// of one request inside a batch goes in that item's status and the other
// items still succeed. Implementations must not throw.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd {

// A loaded model's health as its backend reports it (InferdHostApi's
// model_set_unavailable): once marked, the version is UNAVAILABLE with the
// reason (repository index, readiness) and new requests are refused with
// it. Shared by the ModelVersion and the backend's model. Thread-safe.
class ModelHealth {
 public:
  // The first reason stays; later ones are ignored.
  void MarkUnavailable(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.load(std::memory_order_relaxed)) return;
    reason_ = reason.empty() ? "the backend marked the model unavailable" : reason;
    failed_.store(true, std::memory_order_release);
  }
  // Cheap: checked on every request.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // "" while healthy.
  std::string reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reason_;
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> failed_{false};
  std::string reason_;  // guarded by mu_
};

struct ModelLoadContext {
  const ModelSpec* spec = nullptr;
  std::string model_dir;    // <repository>/<model>
  std::string version_dir;  // <repository>/<model>/<version>
  int64_t version = 0;
  std::string default_model_filename;   // config value, "" if none
  std::string config_json;              // the normalised config as JSON
  std::shared_ptr<ModelHealth> health;  // may be null (tests): reports are then ignored
};

enum class InstanceKind { kCpu, kGpu, kModel };

struct InstanceInfo {
  std::string name;  // e.g. "simple_0_1"
  InstanceKind kind = InstanceKind::kCpu;
  int device_id = 0;
};

// Where the answers to one request go once its backend has taken them over
// (ExecutionItem::TakeOverResponse): 0..N responses then FINAL for a
// decoupled model, exactly one response for any other. Implemented by the
// scheduler (scheduler/response_stream.h). Thread-safe: any thread, calls
// serialised inside; usable after Execute returned. Destroying it (the last
// reference) before FINAL finishes the request with INTERNAL.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Sends `response` (null only with `final`: FINAL alone). Errors, the
  // response being dropped: FAILED_PRECONDITION after FINAL or for a second
  // response of a model that is not decoupled. After the client went away
  // responses are dropped silently (OK).
  virtual Status Send(std::unique_ptr<InferResponse> response, bool final) = 0;
  // Finishes the request with `error` (always final); ignored after FINAL.
  virtual void SendError(Status error) = 0;
  virtual bool IsCancelled() const = 0;
  // Whether the model is decoupled (0..N responses).
  virtual bool decoupled() const = 0;
};

struct ExecutionItem;

// Gives an item's answer to a ResponseStream; implemented by the batch
// runner for the duration of one Execute.
class ResponseTakeover {
 public:
  virtual StatusOr<std::shared_ptr<ResponseStream>> TakeOver(ExecutionItem& item) = 0;

 protected:
  ~ResponseTakeover() = default;
};

// One request of a batch. The backend reads `request` and writes its
// outputs into `response` (AddOutput) or sets `status`; or it takes the
// answer over (TakeOverResponse) and answers through the stream, from any
// thread, also after Execute returned. Once taken over, `response` is
// ignored; an error set in `status` is sent through the stream as the final
// answer unless FINAL was sent already. `request` stays valid until
// Execute returns.
struct ExecutionItem {
  ExecutionItem() = default;
  ExecutionItem(const InferRequest* r, InferResponse* out, Status s = Status::Ok())
      : request(r), response(out), status(std::move(s)) {}

  const InferRequest* request = nullptr;
  InferResponse* response = nullptr;
  Status status;
  ResponseTakeover* takeover = nullptr;   // null: the answer cannot be taken over
  size_t index = 0;                       // the item's place in its batch, for `takeover`
  std::shared_ptr<ResponseStream> taken;  // set once taken over (by the runner)
  // The CPU threads the server gives this execution (the same for every
  // item of a batch; automatic instance layout, scheduler/instance_layout.h);
  // 0: no choice, the backend's own setting.
  int cpu_threads = 0;

  // FAILED_PRECONDITION for a second call or where taking over is not
  // possible.
  StatusOr<std::shared_ptr<ResponseStream>> TakeOverResponse() {
    if (taken)
      return Status(StatusCode::kFailedPrecondition, "the request already has a response factory");
    if (takeover == nullptr) {
      return Status(StatusCode::kFailedPrecondition,
                    "this request's answer cannot be taken over here");
    }
    return takeover->TakeOver(*this);
  }
};

class BackendInstance {
 public:
  virtual ~BackendInstance() = default;
  virtual void Execute(std::span<ExecutionItem> batch) = 0;
};

class BackendModel {
 public:
  virtual ~BackendModel() = default;
  virtual StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo& info) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) = 0;
  // Whether executions honour ExecutionItem::cpu_threads (a plugin of ABI
  // v3 or later declaring INFERD_BACKEND_CAP_CPU_THREAD_HINT): only then
  // may the server choose a model's instance and thread layout.
  virtual bool HonoursCpuThreadHint() const { return false; }
};

}  // namespace inferd
