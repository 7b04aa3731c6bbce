// ModelStreamInfer: one bidirectional stream of inference requests and
// responses (internal to the gRPC front end).
//
// Requests are read one after another and enqueued as soon as each is read
// (never waiting for earlier responses), in stream order. Responses are
// written in request order (models here are not decoupled): each request
// owns a slot in a per-stream queue; the head slot is written once complete,
// one write at a time. Errors travel in `error_message` and the stream goes
// on, unless the client opened it with metadata `triton_grpc_error: true`:
// then the first error (in request order) ends the stream with its status,
// after the responses before it. Every response carries
// parameters["triton_final_response"] = true. Each request's sink fills its
// slot with one response; a non-final response (a decoupled model) fills
// it with an INTERNAL error instead, in its place.
//
// Lifetime: the reactor is shared-owned. gRPC's reference is dropped in
// OnDone; each request's sink holds another, so a response that arrives
// after the stream ended (cancelled, write failed) touches only the
// reactor's own state and never calls into a finished call.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "grpc_service.grpc.pb.h"
#include "server/inference_server.h"

namespace inferd::grpc_frontend {

class StreamInferReactor;

// The open streams, so that shutdown can ask them to finish.
// Thread-safe.
class StreamRegistry {
 public:
  // False once WindDownAll has run: the stream must be refused.
  bool Add(const std::shared_ptr<StreamInferReactor>& stream);
  void Remove(const StreamInferReactor* stream);
  // Refuses new streams and asks every open one to stop reading and finish
  // once it has written what it owes.
  void WindDownAll();
  // Blocks until every registered stream is done (OnDone ran).
  void WaitUntilEmpty();

 private:
  std::mutex mu_;
  std::condition_variable empty_cv_;
  bool closed_ = false;  // guarded by mu_
  std::map<const StreamInferReactor*, std::weak_ptr<StreamInferReactor>> streams_;  // by mu_
};

// Returns the reactor for a new ModelStreamInfer call (never null).
::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
StartStreamInfer(::grpc::CallbackServerContext* context, InferenceServer& server,
                 StreamRegistry& registry);

}  // namespace inferd::grpc_frontend
