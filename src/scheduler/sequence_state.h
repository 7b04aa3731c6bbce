// Implicit sequence state (sequence_batching.state) on the serving path.
//
// A SequenceStateStore holds one live sequence's state tensors. The
// sequence scheduler gives each request of the sequence a StateCaptureSink
// around its own sink: just before the request runs, AddInputs() adds every
// state input (the initial state on START, else what the previous response
// left); when the response passes through the sink, the state outputs are
// stored for the next request and removed from the response unless the
// client asked for them (a state output that is also a configured output).
//
// Ownership: the store is shared by the scheduler's sequence entry and the
// sinks of its queued requests, so it is freed when the sequence ends (END,
// idle release) and its last request has answered.
// Threading: a sequence's requests run one at a time on its instance
// thread, but a response may be sent from a backend thread: the store
// has its own mutex.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/infer_request.h"
#include "core/response_sink.h"
#include "core/thread_annotations.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

class SequenceStateStore {
 public:
  using States = std::shared_ptr<const std::vector<SequenceStateConfig>>;
  SequenceStateStore(States states, bool batching);

  // Adds each state input to `request`: the initial state when `start`
  // (which also forgets any stored state), else the stored one.
  void AddInputs(InferRequest& request, bool start) INFERD_EXCLUDES(mu_);

  // Stores each state output found in `response`; removes those whose
  // `keep` entry is false.
  void Capture(InferResponse& response, const std::vector<bool>& keep) INFERD_EXCLUDES(mu_);

 private:
  struct Stored {
    bool set = false;
    DataType datatype = DataType::kInvalid;
    Shape shape;
    std::string bytes;
  };

  const States states_;
  const bool batching_;
  Mutex mu_;
  std::vector<Stored> stored_ INFERD_GUARDED_BY(mu_);  // per state
};

class StateCaptureSink : public InferResponseSink {
 public:
  StateCaptureSink(std::unique_ptr<InferResponseSink> inner,
                   std::shared_ptr<SequenceStateStore> store, std::vector<bool> keep)
      : inner_(std::move(inner)), store_(std::move(store)), keep_(std::move(keep)) {}

  void Send(std::unique_ptr<InferResponse> response, bool final) override;
  void Finish(Status status) override { inner_->Finish(std::move(status)); }

  SequenceStateStore& store() { return *store_; }

 private:
  std::unique_ptr<InferResponseSink> inner_;
  std::shared_ptr<SequenceStateStore> store_;
  std::vector<bool> keep_;
};

// Wraps `pending`'s sink for a request of a model with states and makes
// sure the backend's state outputs survive output selection (a request
// that names its outputs gets the state outputs added).
void AttachSequenceState(PendingRequest& pending, const std::vector<SequenceStateConfig>& states,
                         std::shared_ptr<SequenceStateStore> store);

}  // namespace inferd
