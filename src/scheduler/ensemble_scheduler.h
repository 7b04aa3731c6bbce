// EnsembleScheduler: runs a model's `ensemble_scheduling` pipeline in
// process. Each step is an ordinary inference on its composing model,
// submitted through `infer` (the server's own entry point) with a sink of
// this scheduler's, so each step is validated and goes through that model's
// scheduler — batching works inside pipelines. Intermediate tensors stay in
// memory: a step's inputs are views into the ensemble request or into
// earlier steps' responses, kept alive by shared ownership.
//
// The ensemble request's sink gets exactly one final signal: the response
// (sent as final) once every step has succeeded, or the first error of any
// step, prefixed with the ensemble and step names; the results of steps
// still running after an error are dropped, so nothing hangs. Ensembles take
// one response per step: a step on a decoupled model is refused before it
// runs (UNIMPLEMENTED, failing the ensemble request; checked per request,
// as composing models may load after the ensemble), and a step whose model
// sends a non-final response anyway fails the ensemble with INTERNAL.
//
// Threading: Enqueue runs the first steps on the caller's thread; later
// steps are launched from the thread that delivers the previous step's
// response. All state of one request is guarded by its own mutex. Stop()
// refuses new requests and waits until every request in flight, and every
// step it launched, has finished.
#pragma once

#include <functional>
#include <memory>

#include "core/model_spec.h"
#include "core/response_sink.h"
#include "core/thread_annotations.h"
#include "scheduler/batch_runner.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

// How an ensemble submits a step: InferenceServer::Infer's shape. Takes
// ownership of the request and the sink; the sink gets one final signal.
using InferFunction =
    std::function<void(std::unique_ptr<InferRequest>, std::unique_ptr<InferResponseSink>)>;

class EnsembleScheduler : public Scheduler {
 public:
  // Checks the pipeline: every step input is an ensemble input or an
  // earlier step's output, every ensemble output is produced, no tensor is
  // produced twice, no step depends on itself. Errors name the tensor.
  static Status Validate(const ModelSpec& spec, const SchedulerConfig& config);

  // `infer` must stay callable until Stop() returns; `stats` and `clock`
  // must outlive the scheduler.
  EnsembleScheduler(ModelIdentity model, const ModelSpec& spec, const SchedulerConfig& config,
                    InferFunction infer, ModelStats* stats, Clock* clock);
  ~EnsembleScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override;
  void Stop() override;

 private:
  struct Run;
  class StepSink;
  void Launch(const std::shared_ptr<Run>& run, size_t step);
  void OnStepDone(const std::shared_ptr<Run>& run, size_t step, const Status& status,
                  std::unique_ptr<InferResponse> response);
  // Gives the ensemble request its final signal, once (later calls return).
  void Complete(const std::shared_ptr<Run>& run, Status status);

  const BatchContext ctx_;
  const ModelSpec spec_;
  const std::vector<EnsembleStep> steps_;
  InferFunction infer_;
  struct Tracker;
  std::shared_ptr<Tracker> tracker_;  // counts runs in flight for Stop()
};

}  // namespace inferd
