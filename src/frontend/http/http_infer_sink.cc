#include "frontend/http/http_infer_sink.h"

namespace inferd::http {

void HttpInferSink::Complete(const Status& status, std::unique_ptr<InferResponse> response) {
  auto fail = [&](const Status& s) {
    responder_->Send(ErrorResponse(HttpStatusFromCode(s.code()), s.message()));
  };
  if (!status.ok()) return fail(status);
  auto encoded = EncodeInferResponse(*response, encoding_);
  if (!encoded.ok()) return fail(encoded.status());
  HttpResponse r;
  if (encoded->header_length) {
    r.content_type = "application/octet-stream";
    r.headers.emplace_back("Inference-Header-Content-Length",
                           std::to_string(*encoded->header_length));
  }
  r.body = std::move(encoded->body);
  if (compression_ != Encoding::kIdentity) {
    // A body that fails to compress goes out uncompressed (identity is
    // always acceptable).
    auto z = Compress(r.body, compression_);
    if (z.ok()) {
      r.body = std::move(*z);
      r.headers.emplace_back("Content-Encoding",
                             compression_ == Encoding::kGzip ? "gzip" : "deflate");
    }
  }
  responder_->Send(std::move(r));
}

}  // namespace inferd::http
