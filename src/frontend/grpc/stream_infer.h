// ModelStreamInfer: one bidirectional stream of inference requests and
// responses (internal to the gRPC front end).
//
// Requests are read one after another and enqueued as soon as each is read
// (never waiting for earlier responses), in stream order. A decoupled
// model's responses are written as they are produced (responses of
// different requests interleave; clients correlate by id), each with
// parameters["triton_final_response"] saying whether it is the last; FINAL
// without a response writes an empty response only when the request asked
// for it (triton_enable_empty_final_response). Other models' answers are
// written in request order: each such request owns a slot in a per-stream
// queue, written once complete, always final. One write at a time.
//
// Errors travel in `error_message` and the stream goes on, unless the
// client opened it with metadata `triton_grpc_error: true`: then the first
// error written ends the stream with its status. A request rejected before
// inference (bad name, undecodable, invalid, unknown model) gets
// error_message and its id only, without triton_final_response, as
// Triton's stream does; a failed inference also names the model and
// version and carries triton_final_response: true. (A rejection is an error
// delivered on the reading thread while InferenceServer::Infer runs; a
// model run inline there that fails is written as one, too.) A stream that is
// cancelled or whose write fails sets the cancel flag of all its requests:
// schedulers drop queued ones and models see it (is_cancelled).
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
