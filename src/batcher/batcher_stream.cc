// The batcher's ModelStreamInfer: one reactor per stream. The first request
// decides the stream's mode:
//   - proxy: a decoupled or sequence model (or sequence parameters): the
//     whole stream goes to one upstream stream unchanged (inferd's ordering
//     and error conventions, byte for byte);
//   - batch: every request goes through Batcher::Infer like a unary call,
//     and the answers are written in request order, as inferd writes the
//     answers of a non-decoupled model: a success with
//     triton_final_response = true; an error with error_message and the id
//     (a rejection: INVALID_ARGUMENT, NOT_FOUND) or also the model name,
//     version and triton_final_response (any other error); with client
//     metadata triton_grpc_error: true the first error ends the stream with
//     its status instead.
//
// Lifetime: the reactor deletes itself in OnDone, which follows Finish,
// which is called only once no request is in flight and the upstream
// stream (proxy mode) is done; so every callback finds it alive.
#include <grpcpp/grpcpp.h>
#include <strings.h>

#include <deque>
#include <mutex>
#include <string_view>

#include "batcher/batcher.h"

namespace inferd::batcher {

using inference::ModelInferRequest;
using inference::ModelStreamInferResponse;

namespace {

// Client metadata worth passing upstream (triton_grpc_error, a restricted
// protocol's key, traceparent), without gRPC's own headers.
bool Forwarded(std::string_view key) {
  return !key.empty() && key[0] != ':' && key.rfind("grpc-", 0) != 0 && key != "content-type" &&
         key != "user-agent" && key != "te" && key != "authority" && key != "inferd-model";
}

bool HasSequenceParameters(const ModelInferRequest& r) {
  return r.parameters().contains("sequence_id") || r.parameters().contains("sequence_start") ||
         r.parameters().contains("sequence_end");
}

class StreamReactor
    : public ::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse> {
 public:
  StreamReactor(Batcher& batcher, ::grpc::CallbackServerContext* server)
      : batcher_(batcher), upstream_(this) {
    const auto deadline = server->deadline();
    if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
      client_.set_deadline(deadline);
      call_.deadline = deadline;
    }
    call_.cancelled = cancelled_;
    for (const auto& [key, value] : server->client_metadata()) {
      std::string_view k(key.data(), key.size());
      std::string_view v(value.data(), value.size());
      if (Forwarded(k)) client_.AddMetadata(std::string(k), std::string(v));
      if (k == "triton_grpc_error" && v.size() == 4 && strncasecmp(v.data(), "true", 4) == 0) {
        error_ends_stream_ = true;
      }
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (mode_ == Mode::kUndecided) {
      if (!ok) {
        reads_done_ = true;
        return MaybeFinish(lock);
      }
      lock.unlock();
      return Decide();
    }
    if (mode_ == Mode::kProxy) {
      if (upstream_finished_) return;
      return ok ? upstream_.StartWrite(&request_) : upstream_.StartWritesDone();
    }
    if (!ok || ending_) {
      reads_done_ = true;
      return MaybeFinish(lock);
    }
    Submit(lock);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (mode_ == Mode::kProxy) {
      if (upstream_finished_) return MaybeFinish(lock);
      if (ok) upstream_.StartRead(&response_);
      return;
    }
    if (!answers_.empty()) answers_.pop_front();
    if (!ok) ending_ = true;
    Pump(lock);
  }

  void OnCancel() override {
    cancelled_->store(true);
    std::lock_guard<std::mutex> lock(mu_);
    if (mode_ == Mode::kProxy) client_.TryCancel();
  }
  void OnDone() override { delete this; }

 private:
  enum class Mode { kUndecided, kProxy, kBatch };
  struct Slot {
    bool done = false;
    ::grpc::Status status;
    ModelStreamInferResponse message;
  };

  // Reads the first request's model and picks the mode.
  void Decide() {
    batcher_.ModelInfoFor(
        request_.model_name(), request_.model_version(), [this](std::optional<ModelInfo> info) {
          std::unique_lock<std::mutex> lock(mu_);
          const bool proxy =
              HasSequenceParameters(request_) || (info && (info->decoupled || info->sequence));
          if (!proxy) {
            mode_ = Mode::kBatch;
            return Submit(lock);
          }
          mode_ = Mode::kProxy;
          batcher_.CountPassThrough("stream");
          batcher_.NextPool().NextStub().async()->ModelStreamInfer(&client_, &upstream_);
          upstream_.StartWrite(&request_);
          upstream_.StartRead(&response_);
          upstream_.StartCall();
        });
  }

  // Batch mode: sends request_ through the batcher and reads the next one.
  void Submit(std::unique_lock<std::mutex>& lock) {
    auto request = std::make_shared<const ModelInferRequest>(std::move(request_));
    request_.Clear();
    answers_.emplace_back();
    Slot* slot = &answers_.back();  // deque: stable while queued
    ++in_flight_;
    StartRead(&request_);
    lock.unlock();
    batcher_.Infer(
        request, call_, "grpc",
        [this, slot, request](const ::grpc::Status& s, inference::ModelInferResponse& response) {
          std::unique_lock<std::mutex> lock(mu_);
          Fill(*slot, *request, s, response);
          --in_flight_;
          Pump(lock);
        });
  }

  static void Fill(Slot& slot, const ModelInferRequest& request, const ::grpc::Status& s,
                   inference::ModelInferResponse& response) {
    slot.done = true;
    slot.status = s;
    auto* out = slot.message.mutable_infer_response();
    if (s.ok()) {
      out->Swap(&response);
      (*out->mutable_parameters())["triton_final_response"].set_bool_param(true);
      return;
    }
    slot.message.set_error_message(s.error_message());
    out->set_id(request.id());
    if (s.error_code() == ::grpc::StatusCode::INVALID_ARGUMENT ||
        s.error_code() == ::grpc::StatusCode::NOT_FOUND) {
      return;  // a rejection: the id alone
    }
    out->set_model_name(request.model_name());
    out->set_model_version(request.model_version());
    (*out->mutable_parameters())["triton_final_response"].set_bool_param(true);
  }

  // Writes the next answer in request order, or ends the stream.
  void Pump(std::unique_lock<std::mutex>& lock) {
    if (writing_) return;
    while (!answers_.empty() && answers_.front().done && !ending_) {
      Slot& next = answers_.front();
      if (!next.status.ok() && error_ends_stream_) {
        ending_ = true;
        end_status_ = next.status;
        break;
      }
      writing_ = true;
      StartWrite(&next.message);
      return;
    }
    MaybeFinish(lock);
  }

  // Finishes once nothing is owed: reads done (or the stream ending), no
  // request in flight, nothing left to write, the upstream stream done.
  void MaybeFinish(std::unique_lock<std::mutex>& lock) {
    if (finished_ || writing_ || in_flight_ > 0) return;
    ::grpc::Status status = ::grpc::Status::OK;
    if (mode_ == Mode::kProxy) {
      if (!upstream_finished_) return;
      status = upstream_status_;
    } else if (ending_) {
      status = end_status_;
    } else if (!reads_done_ || !answers_.empty()) {
      return;
    }
    finished_ = true;
    lock.unlock();
    Finish(status);  // the last use of `this`: OnDone may follow at once
  }

  // Proxy mode's upstream stream.
  class Upstream : public ::grpc::ClientBidiReactor<ModelInferRequest, ModelStreamInferResponse> {
   public:
    explicit Upstream(StreamReactor* stream) : stream_(stream) {}
    void OnReadDone(bool ok) override {
      if (!ok) return;
      std::lock_guard<std::mutex> lock(stream_->mu_);
      stream_->writing_ = true;
      stream_->StartWrite(&stream_->response_);
    }
    void OnWriteDone(bool ok) override {
      if (ok) stream_->StartRead(&stream_->request_);
    }
    void OnDone(const ::grpc::Status& status) override {
      std::unique_lock<std::mutex> lock(stream_->mu_);
      stream_->upstream_finished_ = true;
      stream_->upstream_status_ = status;
      stream_->MaybeFinish(lock);
    }

   private:
    StreamReactor* const stream_;
  };

  Batcher& batcher_;
  ::grpc::ClientContext client_;
  Upstream upstream_;
  middleman::CallOptions call_;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  bool error_ends_stream_ = false;
  ModelInferRequest request_;
  ModelStreamInferResponse response_;

  std::mutex mu_;
  Mode mode_ = Mode::kUndecided;
  bool reads_done_ = false;
  bool writing_ = false;
  bool finished_ = false;
  bool ending_ = false;  // batch mode: stop reading, finish with end_status_
  ::grpc::Status end_status_;
  int in_flight_ = 0;
  std::deque<Slot> answers_;
  bool upstream_finished_ = false;
  ::grpc::Status upstream_status_;
};

}  // namespace

::grpc::ServerBidiReactor<ModelInferRequest, ModelStreamInferResponse>* Batcher::StartStream(
    ::grpc::CallbackServerContext* context) {
  return new StreamReactor(*this, context);
}

void Batcher::ModelInfoFor(const std::string& name, const std::string& version,
                           std::function<void(std::optional<ModelInfo>)> next) {
  models_.Get(name, version, std::move(next));
}

void Batcher::CountPassThrough(const std::string& reason) {
  service_.metrics()
      .counter("batcher_pass_through_total", "Requests sent on unchanged, by reason",
               {{"reason", reason}})
      .Add();
}

}  // namespace inferd::batcher
