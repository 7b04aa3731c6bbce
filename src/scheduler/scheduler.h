// Scheduler: a queue plus a policy that hands requests to model instances.
//
// Enqueue never blocks. From the moment Enqueue is called the scheduler owns
// the request and its sink (PendingRequest) and gives the sink exactly one
// final signal (core/response_sink.h): the response, sent as final, or an
// error — at once, on the caller's thread, when it cannot take the request
// (stopped, a full queue, a sequence error), or later (timeout,
// cancellation, a backend error). The sink is destroyed after its final
// signal, with the PendingRequest.
// Stop() finishes every accepted request, then joins the instance threads;
// it may be called from any thread except an instance thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/infer_request.h"
#include "core/response_sink.h"
#include "core/status.h"

namespace inferd {

struct PendingRequest {
  std::unique_ptr<InferRequest> request;
  std::unique_ptr<InferResponseSink> sink;  // never null once enqueued
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();

  // Filled by the scheduler.
  std::string batch_signature;  // requests batch together only when equal
  int64_t rows = 1;             // batch rows this request contributes
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool delayed = false;  // timed out under a DELAY policy
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void Enqueue(std::unique_ptr<PendingRequest> pending) = 0;
  virtual void Stop() = 0;
};

}  // namespace inferd
