#include "frontend/grpc/stream_infer.h"

#include <strings.h>

#include <atomic>
#include <deque>
#include <thread>

#include "core/request_log.h"
#include "core/response_sink.h"
#include "frontend/grpc/grpc_codec.h"
#include "frontend/grpc/grpc_trace.h"

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
  StreamInferReactor(InferenceServer& server, StreamRegistry& registry, bool error_ends_stream,
                     std::optional<trace::TraceContext> trace_context)
      : server_(server),
        registry_(registry),
        error_ends_stream_(error_ends_stream),
        trace_context_(std::move(trace_context)) {}

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
    {
      std::lock_guard<std::mutex> lock(mu_);
      message = std::move(reading_);
      if (finished_ || abandoned_) return;
    }
    auto slot = std::make_shared<Slot>();
    slot->id = message->id();
    slot->model_name = message->model_name();
    slot->model_version = message->model_version();
    // Only reads: the next read starts after this, so slots are made in
    // stream order.
    if (auto v = ParseModelVersion(slot->model_version); v.ok()) {
      slot->decoupled = server_.IsDecoupled(slot->model_name, *v);
    }
    if (auto p = message->parameters().find("triton_enable_empty_final_response");
        p != message->parameters().end()) {
      slot->empty_final = p->second.bool_param();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (slot->decoupled) {
        ++decoupled_open_;
      } else {
        pending_.push_back(slot);
      }
    }
    // Outside the lock: an error is delivered on this thread, inside Infer.
    Process(std::move(message), slot);
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_ || reads_done_) return;
    if (OwedLocked() >= kMaxPendingPerStream) {
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
  // One message to write, and the error it reports (for triton_grpc_error).
  struct Message {
    ModelStreamInferResponse response;
    Status error;
  };

  // One request of the stream.
  struct Slot {
    std::string id, model_name, model_version;
    std::map<std::string, SharedMemoryOutput> shm_outputs;  // set before the request starts
    bool decoupled = false;    // responses go out as produced; else in request order
    bool empty_final = false;  // triton_enable_empty_final_response
    // Set by Process around its Infer call: an error delivered then, on that
    // thread, is a rejection before inference.
    std::atomic<bool> in_infer{false};
    std::thread::id infer_thread;
    bool done = false;  // ordered slots: `message` is filled (guarded by mu_)
    Message message;    // ordered slots: written by Complete before `done`
  };

  // The sink of one request. A model that is not decoupled fills its slot
  // with its one response (a non-final one, or none, fills it with INTERNAL
  // naming the problem, in its place); a decoupled model's responses are
  // written as they come.
  class StreamSink final : public InferResponseSink {
   public:
    StreamSink(std::shared_ptr<StreamInferReactor> stream, std::shared_ptr<Slot> slot)
        : stream_(std::move(stream)), slot_(std::move(slot)) {}
    ~StreamSink() override {
      if (!done_) Finish(NoResponseError());
    }
    void Send(std::unique_ptr<InferResponse> response, bool final) override {
      if (done_) return;
      if (!slot_->decoupled) {
        done_ = true;
        if (!final) return stream_->Complete(slot_, NonFinalResponseError(*response), nullptr);
        return stream_->Complete(slot_, Status::Ok(), std::move(response));
      }
      done_ = final;
      stream_->Emit(slot_, Status::Ok(), std::move(response), final);
    }
    void Finish(Status status) override {
      if (done_) return;
      done_ = true;
      if (!slot_->decoupled) {
        const bool rejected = Rejected(status);  // before status is moved
        return stream_->Complete(slot_, status.ok() ? NoResponseError() : std::move(status),
                                 nullptr, rejected);
      }
      const bool rejected = Rejected(status);
      stream_->Emit(slot_, std::move(status), nullptr, true, rejected);
    }

   private:
    bool Rejected(const Status& status) const {
      return !status.ok() && slot_->in_infer.load(std::memory_order_acquire) &&
             slot_->infer_thread == std::this_thread::get_id();
    }
    const std::shared_ptr<StreamInferReactor> stream_;
    const std::shared_ptr<Slot> slot_;
    bool done_ = false;  // calls never overlap (the sink contract)
  };

  void Process(std::shared_ptr<ModelInferRequest> message, const std::shared_ptr<Slot>& slot) {
    const std::string name = message->model_name();
    const std::string version = message->model_version();
    const auto received = std::chrono::steady_clock::now();
    auto self = shared_from_this();
    auto reject = [&](const Status& s) {
      LogRefusedRequest("grpc", "gRPC stream", name, s);
      if (slot->decoupled) return Emit(slot, s, nullptr, true, /*rejected=*/true);
      Complete(slot, s, nullptr, /*rejected=*/true);
    };
    if (Status bad = ControlPlane::CheckModelName(name); !bad.ok()) return reject(bad);
    auto decoded = DecodeInferRequest(std::move(message), &server_.shared_memory());
    if (!decoded.ok()) {
      Status s = decoded.status();
      // An unknown model is reported as such, whatever else is wrong.
      if (auto v = ParseModelVersion(version); v.ok()) {
        if (Status m = server_.CheckModel(name, *v); !m.ok()) s = m;
      }
      return reject(s);
    }
    slot->shm_outputs = std::move(decoded->shm_outputs);
    // One flag for the stream: set when nobody will read its responses
    // (cancelled, write failed); models see it (is_cancelled) and stop.
    decoded->request->cancel_flag = std::shared_ptr<std::atomic<bool>>(self, &cancelled_);
    if (server_.tracer().Active()) {  // a stream's responses are not stamped (GRPC_SEND_*)
      decoded->request->trace = SampleGrpcRequest(server_.tracer(), trace_context_, name, received);
    }
    slot->infer_thread = std::this_thread::get_id();
    slot->in_infer.store(true, std::memory_order_release);
    auto sink = LogDecodedRequest("grpc", "gRPC stream", *decoded->request,
                                  std::make_unique<StreamSink>(std::move(self), slot));
    server_.Infer(std::move(decoded->request), std::move(sink));
    slot->in_infer.store(false, std::memory_order_release);
  }

  // Pre-inference rejections carry the id alone and no final flag (as
  // Triton's stream does); every other answer carries id, model name and
  // version, and triton_final_response.
  static void FillError(const Slot& slot, const Status& status, bool rejected, Message& m) {
    m.error = status;
    m.response.set_error_message(status.message());
    auto* infer_response = m.response.mutable_infer_response();
    infer_response->Clear();
    infer_response->set_id(slot.id);
    if (rejected) return;
    infer_response->set_model_name(slot.model_name);
    infer_response->set_model_version(slot.model_version);
    (*infer_response->mutable_parameters())["triton_final_response"].set_bool_param(true);
  }

  // An ordered slot's one answer, any thread, once per slot. Fills the slot
  // (it is this call's alone until `done`), then writes whatever is ready.
  void Complete(const std::shared_ptr<Slot>& slot, Status status,
                std::unique_ptr<InferResponse> response, bool rejected = false) {
    Message& m = slot->message;
    auto* infer_response = m.response.mutable_infer_response();
    if (status.ok()) status = EncodeInferResponse(*response, slot->shm_outputs, infer_response);
    if (status.ok()) {
      (*infer_response->mutable_parameters())["triton_final_response"].set_bool_param(true);
    } else {
      FillError(*slot, status, rejected, m);
    }
    std::lock_guard<std::mutex> lock(mu_);
    slot->done = true;
    PumpLocked();
  }

  // A decoupled request's response (or error, or FINAL alone), any thread;
  // calls of one request never overlap. Queued for writing at once.
  void Emit(const std::shared_ptr<Slot>& slot, Status status,
            std::unique_ptr<InferResponse> response, bool final, bool rejected = false) {
    std::unique_ptr<Message> m;
    if (status.ok() && response != nullptr) {
      m = std::make_unique<Message>();
      auto* infer_response = m->response.mutable_infer_response();
      status = EncodeInferResponse(*response, slot->shm_outputs, infer_response);
      if (status.ok()) {
        (*infer_response->mutable_parameters())["triton_final_response"].set_bool_param(final);
      }
    } else if (status.ok() && slot->empty_final) {  // FINAL alone, shown only on request
      m = std::make_unique<Message>();
      auto* infer_response = m->response.mutable_infer_response();
      infer_response->set_id(slot->id);
      infer_response->set_model_name(slot->model_name);
      infer_response->set_model_version(slot->model_version);
      (*infer_response->mutable_parameters())["triton_final_response"].set_bool_param(true);
    }
    if (!status.ok()) {
      if (!m) m = std::make_unique<Message>();
      FillError(*slot, status, rejected, *m);
      if (!rejected && !final) {
        (*m->response.mutable_infer_response()->mutable_parameters())["triton_final_response"]
            .set_bool_param(false);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (final) --decoupled_open_;
    if (m && !finished_ && !abandoned_) ready_.push_back(std::move(m));
    PumpLocked();
  }

  size_t OwedLocked() const { return pending_.size() + decoupled_open_; }

  void StartNextReadLocked() {
    reading_ = std::make_shared<ModelInferRequest>();
    StartRead(reading_.get());
  }

  // Stops the stream without writing what is still owed.
  void AbandonLocked(::grpc::Status status) {
    if (!abandoned_) final_status_ = std::move(status);
    abandoned_ = true;
    reads_done_ = true;
    cancelled_.store(true, std::memory_order_relaxed);  // models stop, queued requests drop
  }

  // Writes the next message if no write is outstanding: a decoupled
  // response first (they go out as produced), else the head ordered slot
  // once complete. Finishes the call when nothing more will be written.
  // Called with mu_ held. gRPC never runs a reaction inline from StartWrite
  // or Finish, and OnDone cannot run while a reaction or a completion
  // (which holds a reference) is inside this function.
  void PumpLocked() {
    if (finished_) return;
    if (read_paused_ && !reads_done_ && OwedLocked() < kMaxPendingPerStream) {
      read_paused_ = false;
      StartNextReadLocked();
    }
    if (writing_) return;
    while (!abandoned_) {
      std::unique_ptr<Message> next;
      if (!ready_.empty()) {
        next = std::move(ready_.front());
        ready_.pop_front();
      } else if (!pending_.empty() && pending_.front()->done) {
        next = std::make_unique<Message>(std::move(pending_.front()->message));
        pending_.pop_front();
      } else {
        break;
      }
      if (error_ends_stream_ && !next->error.ok()) {
        AbandonLocked(ToGrpcStatus(next->error));
        break;
      }
      writing_ = std::move(next);
      StartWrite(&writing_->response);
      return;
    }
    if (abandoned_ || (reads_done_ && pending_.empty() && decoupled_open_ == 0 && ready_.empty())) {
      finished_ = true;
      pending_.clear();
      ready_.clear();
      Finish(final_status_);
    }
  }

  InferenceServer& server_;
  StreamRegistry& registry_;
  const bool error_ends_stream_;
  const std::optional<trace::TraceContext> trace_context_;  // the stream's W3C context
  std::shared_ptr<StreamInferReactor> self_;                // gRPC's reference, dropped in OnDone

  std::mutex mu_;
  std::shared_ptr<ModelInferRequest> reading_;  // target of the outstanding read
  std::deque<std::shared_ptr<Slot>> pending_;   // ordered answers owed, in request order
  size_t decoupled_open_ = 0;                   // decoupled requests not finished yet
  std::deque<std::unique_ptr<Message>> ready_;  // decoupled messages, in the order produced
  std::unique_ptr<Message> writing_;            // the message being written, if any
  bool reads_done_ = false;                     // no more requests will be read
  bool read_paused_ = false;                    // too many answers owed
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
  std::optional<trace::TraceContext> trace_context;
  if (server.tracer().Active() && server.tracer().mode() == trace::TraceMode::kOpenTelemetry) {
    trace_context = GrpcTraceContext(*context);  // one context for the stream's requests
  }
  auto reactor = std::make_shared<StreamInferReactor>(server, registry, error_ends_stream,
                                                      std::move(trace_context));
  reactor->Begin(registry.Add(reactor));
  return reactor.get();
}

}  // namespace inferd::grpc_frontend
