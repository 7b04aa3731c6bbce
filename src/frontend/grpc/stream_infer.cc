#include "frontend/grpc/stream_infer.h"

#include <strings.h>

#include <atomic>
#include <deque>

#include "core/response_sink.h"
#include "frontend/grpc/grpc_codec.h"

namespace inferd::grpc_frontend {

using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

// Reading pauses while this many responses are owed on one stream, so a
// client that sends without reading cannot queue unbounded work.
constexpr size_t kMaxPendingPerStream = 1024;

class StreamInferReactor final
    : public ::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse>,
      public std::enable_shared_from_this<StreamInferReactor> {
 public:
  StreamInferReactor(InferenceServer& server, StreamRegistry& registry, bool error_ends_stream)
      : server_(server), registry_(registry), error_ends_stream_(error_ends_stream) {}

  // Takes gRPC's reference and starts reading (or refuses the stream).
  void Begin(bool accepted) {
    self_ = shared_from_this();
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepted) {
      finished_ = true;
      Finish(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "Server is shutting down"));
      return;
    }
    StartNextReadLocked();
  }

  // Shutdown: stop reading; finish once every response owed is written.
  void WindDown() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    reads_done_ = true;
    if (!client_half_closed_ && final_status_.ok()) {
      final_status_ = ::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "Server is shutting down");
    }
    PumpLocked();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // half-close by the client, or the call is broken
      std::lock_guard<std::mutex> lock(mu_);
      reads_done_ = true;
      client_half_closed_ = true;
      reading_.reset();
      PumpLocked();
      return;
    }
    std::shared_ptr<ModelInferRequest> message;
    auto slot = std::make_shared<Slot>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      message = std::move(reading_);
      if (finished_ || abandoned_) return;
      slot->id = message->id();
      slot->model_name = message->model_name();
      slot->model_version = message->model_version();
      pending_.push_back(slot);
    }
    // Outside the lock: an error is delivered on this thread, inside Infer.
    Process(std::move(message), slot);
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ || reads_done_) return;
    if (pending_.size() >= kMaxPendingPerStream) {
      read_paused_ = true;
    } else {
      StartNextReadLocked();
    }
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_.reset();
    if (!ok) AbandonLocked(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "stream write failed"));
    PumpLocked();
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    AbandonLocked(::grpc::Status::CANCELLED);
    PumpLocked();
  }

  void OnDone() override {
    registry_.Remove(this);
    auto last = std::move(self_);  // may destroy *this when it goes out of scope
  }

 private:
  struct Slot {
    std::string id, model_name, model_version;
    std::map<std::string, SharedMemoryOutput> shm_outputs;  // set before the request starts
    bool done = false;                                      // guarded by the reactor's mu_
    Status error;                                           // written by Complete before `done`
    ModelStreamInferResponse response;
  };

  // The sink of one request: its one response (or error) fills its slot. A
  // non-final response, or none, fills it with INTERNAL naming the problem
  // (SingleResponseSink), in its place in the stream.
  class SlotSink final : public SingleResponseSink<SlotSink> {
   public:
    SlotSink(std::shared_ptr<StreamInferReactor> stream, std::shared_ptr<Slot> slot)
        : stream_(std::move(stream)), slot_(std::move(slot)) {}
    void Complete(Status status, std::unique_ptr<InferResponse> response) {
      stream_->Complete(slot_, std::move(status), std::move(response));
    }

   private:
    const std::shared_ptr<StreamInferReactor> stream_;
    const std::shared_ptr<Slot> slot_;
  };

  void Process(std::shared_ptr<ModelInferRequest> message, const std::shared_ptr<Slot>& slot) {
    const std::string name = message->model_name();
    const std::string version = message->model_version();
    auto self = shared_from_this();
    if (Status bad = ControlPlane::CheckModelName(name); !bad.ok()) {
      Complete(slot, bad, nullptr);
      return;
    }
    auto decoded = DecodeInferRequest(std::move(message), &server_.shared_memory());
    if (!decoded.ok()) {
      Status s = decoded.status();
      // An unknown model is reported as such, whatever else is wrong.
      if (auto v = ParseModelVersion(version); v.ok()) {
        if (Status m = server_.CheckModel(name, *v); !m.ok()) s = m;
      }
      Complete(slot, s, nullptr);
      return;
    }
    slot->shm_outputs = std::move(decoded->shm_outputs);
    // One flag for the stream: set when nobody will read its responses.
    decoded->request->cancel_flag = std::shared_ptr<std::atomic<bool>>(self, &cancelled_);
    server_.Infer(std::move(decoded->request), std::make_unique<SlotSink>(std::move(self), slot));
  }

  // Any thread, once per slot. Fills the slot (it is this call's alone until
  // `done`), then writes whatever is ready.
  void Complete(const std::shared_ptr<Slot>& slot, Status status,
                std::unique_ptr<InferResponse> response) {
    auto* infer_response = slot->response.mutable_infer_response();
    if (status.ok()) status = EncodeInferResponse(*response, slot->shm_outputs, infer_response);
    if (!status.ok()) {
      slot->error = status;
      slot->response.set_error_message(status.message());
      infer_response->set_id(slot->id);
      infer_response->set_model_name(slot->model_name);
      infer_response->set_model_version(slot->model_version);
    }
    (*infer_response->mutable_parameters())["triton_final_response"].set_bool_param(true);
    std::lock_guard<std::mutex> lock(mu_);
    slot->done = true;
    PumpLocked();
  }

  void StartNextReadLocked() {
    reading_ = std::make_shared<ModelInferRequest>();
    StartRead(reading_.get());
  }

  // Stops the stream without writing what is still owed.
  void AbandonLocked(::grpc::Status status) {
    if (!abandoned_) final_status_ = std::move(status);
    abandoned_ = true;
    reads_done_ = true;
    cancelled_.store(true, std::memory_order_relaxed);  // queued requests can be dropped
  }

  // Writes the head slot if it is complete and no write is outstanding;
  // finishes the call when nothing more will be written. Called with mu_
  // held. gRPC never runs a reaction inline from StartWrite or Finish, and
  // OnDone cannot run while a reaction or a completion (which holds a
  // reference) is inside this function.
  void PumpLocked() {
    if (finished_ || writing_) return;
    if (!abandoned_ && !pending_.empty() && pending_.front()->done) {
      std::shared_ptr<Slot> head = std::move(pending_.front());
      pending_.pop_front();
      if (error_ends_stream_ && !head->error.ok()) {
        AbandonLocked(ToGrpcStatus(head->error));
      } else {
        writing_ = std::move(head);
        StartWrite(&writing_->response);
        if (read_paused_ && !reads_done_ && pending_.size() < kMaxPendingPerStream) {
          read_paused_ = false;
          StartNextReadLocked();
        }
        return;
      }
    }
    if (abandoned_ || (reads_done_ && pending_.empty())) {
      finished_ = true;
      pending_.clear();
      Finish(final_status_);
    }
  }

  InferenceServer& server_;
  StreamRegistry& registry_;
  const bool error_ends_stream_;
  std::shared_ptr<StreamInferReactor> self_;  // gRPC's reference, dropped in OnDone

  std::mutex mu_;
  std::shared_ptr<ModelInferRequest> reading_;  // target of the outstanding read
  std::deque<std::shared_ptr<Slot>> pending_;   // responses owed, in request order
  std::shared_ptr<Slot> writing_;               // the slot being written, if any
  bool reads_done_ = false;                     // no more requests will be read
  bool read_paused_ = false;                    // too many responses owed
  bool client_half_closed_ = false;
  bool abandoned_ = false;  // cancelled, write failed, or an error ends the stream
  bool finished_ = false;   // Finish called
  ::grpc::Status final_status_;
  std::atomic<bool> cancelled_{false};  // every request's cancel_flag
};

bool StreamRegistry::Add(const std::shared_ptr<StreamInferReactor>& stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  streams_.emplace(stream.get(), stream);
  return true;
}

void StreamRegistry::Remove(const StreamInferReactor* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(stream);
  if (streams_.empty()) empty_cv_.notify_all();
}

void StreamRegistry::WindDownAll() {
  std::vector<std::shared_ptr<StreamInferReactor>> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& [key, weak] : streams_) {
      if (auto s = weak.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) s->WindDown();
}

void StreamRegistry::WaitUntilEmpty() {
  std::unique_lock<std::mutex> lock(mu_);
  empty_cv_.wait(lock, [&] { return streams_.empty(); });
}

::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse>* StartStreamInfer(
    ::grpc::CallbackServerContext* context, InferenceServer& server, StreamRegistry& registry) {
  bool error_ends_stream = false;
  const auto& md = context->client_metadata();
  if (auto it = md.find("triton_grpc_error"); it != md.end()) {
    error_ends_stream = it->second.size() == 4 && strncasecmp(it->second.data(), "true", 4) == 0;
  }
  auto reactor = std::make_shared<StreamInferReactor>(server, registry, error_ends_stream);
  reactor->Begin(registry.Add(reactor));
  return reactor.get();
}

}  // namespace inferd::grpc_frontend
