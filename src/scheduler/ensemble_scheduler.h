// EnsembleScheduler: runs a model's `ensemble_scheduling` pipeline in
// process. Each step is an ordinary inference on its composing model,
// submitted through `infer` (the server's own entry point), so each step is
// validated and goes through that model's scheduler — batching works inside
// pipelines. Intermediate tensors stay in memory: a step's inputs are views
// into the ensemble request or into earlier steps' responses, kept alive by
// shared ownership. The first error of any step completes the ensemble
// request with that error; later completions are ignored, so nothing hangs.
//
// Threading: Enqueue runs the first steps on the caller's thread; later
// steps are launched from the completing step's thread. All state of one
// request is guarded by its own mutex.
#pragma once

#include <functional>
#include <memory>

#include "core/model_spec.h"
#include "scheduler/batch_runner.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_config.h"

namespace inferd {

using InferFunction = std::function<void(std::unique_ptr<InferRequest>, InferCompletion)>;

class EnsembleScheduler : public Scheduler {
 public:
  // Checks the pipeline: every step input is an ensemble input or an
  // earlier step's output, every ensemble output is produced, no tensor is
  // produced twice, no step depends on itself. Errors name the tensor.
  static Status Validate(const ModelSpec& spec, const SchedulerConfig& config);

  EnsembleScheduler(ModelIdentity model, const ModelSpec& spec, const SchedulerConfig& config,
                    InferFunction infer, ModelStats* stats, Clock* clock);
  ~EnsembleScheduler() override;

  void Enqueue(std::unique_ptr<PendingRequest> pending) override;
  void Stop() override;

 private:
  struct Run;
  void Launch(const std::shared_ptr<Run>& run, size_t step);
  void OnStepDone(const std::shared_ptr<Run>& run, size_t step, Status status,
                  std::unique_ptr<InferResponse> response);
  void Finish(const std::shared_ptr<Run>& run, Status status);

  const BatchContext ctx_;
  const ModelSpec spec_;
  const std::vector<EnsembleStep> steps_;
  InferFunction infer_;
  struct Tracker;
  std::shared_ptr<Tracker> tracker_;  // counts runs in flight for Stop()
};

}  // namespace inferd
