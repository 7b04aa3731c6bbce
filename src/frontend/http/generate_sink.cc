#include "frontend/http/generate_sink.h"

#include "frontend/http/generate_codec.h"

namespace inferd::http {
namespace {

HttpResponse StatusError(const Status& s) {
  return ErrorResponse(HttpStatusFromCode(s.code()), s.message());
}

}  // namespace

// ---- /generate --------------------------------------------------------------------------

void GenerateSink::Send(std::unique_ptr<InferResponse> response, bool final) {
  if (done_) return;
  if (++responses_ == 1) response_ = std::move(response);
  if (final) Complete(Status::Ok());
}

void GenerateSink::Finish(Status status) {
  if (!done_) Complete(status);
}

void GenerateSink::Complete(const Status& status) {
  done_ = true;
  if (!status.ok()) return responder_->Send(StatusError(status));
  if (responses_ != 1) {
    return responder_->Send(StatusError(InvalidArgument(kGenerateNotOneResponse)));
  }
  auto json = EncodeGenerateResponse(*response_);
  response_.reset();
  if (!json.ok()) return responder_->Send(StatusError(json.status()));
  HttpResponse r;
  r.body = std::move(*json);
  responder_->Send(std::move(r));
}

// ---- /generate_stream -------------------------------------------------------------------

void GenerateStreamSink::Start(int status) {
  HttpResponse head;
  head.status = status;
  head.content_type = "text/event-stream; charset=utf-8";
  stream_ = StartStream(responder_, std::move(head));
}

void GenerateStreamSink::Event(const std::string& json) { stream_->Write(SseEvent(json)); }

void GenerateStreamSink::End() {
  done_ = true;
  stream_->End();
}

void GenerateStreamSink::Send(std::unique_ptr<InferResponse> response, bool final) {
  if (done_) return;
  if (stream_ && stream_->Closed()) {  // the client has gone: nothing to encode for
    if (final) End();
    return;
  }
  auto json = EncodeGenerateResponse(*response);
  if (!stream_) Start(json.ok() ? 200 : HttpStatusFromCode(json.status().code()));
  Event(json.ok() ? std::move(*json) : StatusError(json.status()).body);
  if (final) End();
}

void GenerateStreamSink::Finish(Status status) {
  if (done_) return;
  if (!status.ok() && !stream_ && std::this_thread::get_id() == handler_thread_ &&
      !handler_returned_->load()) {
    done_ = true;  // refused before inference: a plain JSON error
    return responder_->Send(StatusError(status));
  }
  if (!stream_) Start(status.ok() ? 200 : HttpStatusFromCode(status.code()));
  if (!status.ok() && !stream_->Closed()) Event(StatusError(status).body);
  End();
}

}  // namespace inferd::http
