// HttpInferSink: the response path of one HTTP infer request. Encodes the
// final response (JSON, or JSON header plus binary tensors, as the request
// asked), compresses it if the client accepts gzip or deflate, and hands it
// to the request's responder; an error becomes the status code of its
// Status and {"error": message}.
//
// An HTTP request gets exactly one response: a non-final response, or a
// final signal without one, is answered 500 naming the problem
// (SingleResponseSink); nothing after the first signal is sent.
//
// Ownership: holds the responder (shared with the transport, which keeps
// the connection). Threading: the sink contract (core/response_sink.h); the
// responder is thread-safe, so the final signal may come on any thread.
#pragma once

#include <memory>

#include "core/response_sink.h"
#include "frontend/http/compression.h"
#include "frontend/http/http_types.h"
#include "frontend/http/infer_codec.h"

namespace inferd::http {

class HttpInferSink final : public SingleResponseSink<HttpInferSink> {
 public:
  // `encoding`: how the request asked for its outputs; `compression`: the
  // Content-Encoding to answer with (kIdentity: none).
  HttpInferSink(std::shared_ptr<HttpResponder> responder, OutputEncoding encoding,
                Encoding compression)
      : responder_(std::move(responder)),
        encoding_(std::move(encoding)),
        compression_(compression) {}

  void Complete(const Status& status, std::unique_ptr<InferResponse> response);

 private:
  const std::shared_ptr<HttpResponder> responder_;
  const OutputEncoding encoding_;
  const Encoding compression_;
};

}  // namespace inferd::http
