#include "scheduler/ensemble_scheduler.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "core/classification.h"
#include "trace/request_trace.h"

namespace inferd {

namespace {}  // namespace

struct EnsembleScheduler::Tracker {
  Mutex mu;
  CondVar cv;
  int64_t runs INFERD_GUARDED_BY(mu) = 0;
  bool stopping INFERD_GUARDED_BY(mu) = false;
};

// One ensemble request in flight. Lives until its last step's sink lets go.
struct EnsembleScheduler::Run {
  struct Tensor {
    DataType datatype;
    Shape shape;
    BufferView data;
    std::shared_ptr<const void> owner;  // keeps `data` alive
  };
  Mutex mu;
  std::unique_ptr<PendingRequest> pending INFERD_GUARDED_BY(mu);  // null once completed
  std::map<std::string, Tensor> tensors INFERD_GUARDED_BY(mu);
  std::vector<bool> launched INFERD_GUARDED_BY(mu);
  size_t steps_done INFERD_GUARDED_BY(mu) = 0;
  std::shared_ptr<Tracker> tracker;
  ~Run() {
    MutexLock lock(tracker->mu);
    if (--tracker->runs == 0) tracker->cv.NotifyAll();
  }
};

// The sink of one step: hands its one response (or error) to OnStepDone.
class EnsembleScheduler::StepSink final : public SingleResponseSink<StepSink> {
 public:
  StepSink(EnsembleScheduler* scheduler, std::shared_ptr<Run> run, size_t step)
      : scheduler_(scheduler), run_(std::move(run)), step_(step) {}
  void Complete(const Status& status, std::unique_ptr<InferResponse> response) {
    scheduler_->OnStepDone(run_, step_, status, std::move(response));
  }

 private:
  EnsembleScheduler* const scheduler_;
  const std::shared_ptr<Run> run_;
  const size_t step_;
};

Status EnsembleScheduler::Validate(const ModelSpec& spec, const SchedulerConfig& config) {
  const auto& steps = config.ensemble_steps;
  if (steps.empty()) {
    return InvalidArgument("ensemble '" + spec.name + "' has no 'ensemble_scheduling.step'");
  }
  std::set<std::string> available;
  for (const auto& in : spec.inputs) available.insert(in.name);
  std::set<std::string> produced;
  std::vector<bool> placed(steps.size(), false);
  // Topological placement: repeatedly place steps whose inputs are available.
  for (size_t round = 0; round < steps.size(); ++round) {
    bool progress = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (placed[i]) continue;
      bool ready = true;
      for (const auto& [in, tensor] : steps[i].input_map) ready = ready && available.count(tensor);
      if (!ready) continue;
      placed[i] = progress = true;
      for (const auto& [out, tensor] : steps[i].output_map) {
        if (available.count(tensor) || !produced.insert(tensor).second) {
          return InvalidArgument("ensemble '" + spec.name + "': tensor '" + tensor +
                                 "' is produced more than once");
        }
        available.insert(tensor);
      }
    }
    if (!progress) break;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (placed[i]) continue;
    for (const auto& [in, tensor] : steps[i].input_map) {
      if (!available.count(tensor)) {
        return InvalidArgument("ensemble '" + spec.name + "': step " + std::to_string(i) + " ('" +
                               steps[i].model_name + "') needs tensor '" + tensor +
                               "', which no ensemble input or earlier step provides");
      }
    }
  }
  for (const auto& out : spec.outputs) {
    if (!produced.count(out.name)) {
      return InvalidArgument("ensemble '" + spec.name + "': output '" + out.name +
                             "' is not produced by any step");
    }
  }
  return Status::Ok();
}

EnsembleScheduler::EnsembleScheduler(ModelIdentity model, const ModelSpec& spec,
                                     const SchedulerConfig& config, InferFunction infer,
                                     ModelStats* stats, Clock* clock)
    : ctx_{std::move(model), stats, clock},
      spec_(spec),
      steps_(config.ensemble_steps),
      infer_(std::move(infer)),
      tracker_(std::make_shared<Tracker>()) {}

EnsembleScheduler::~EnsembleScheduler() { Stop(); }

void EnsembleScheduler::Stop() {
  MutexLock lock(tracker_->mu);
  tracker_->stopping = true;
  while (tracker_->runs != 0) tracker_->cv.Wait(lock);
}

void EnsembleScheduler::Enqueue(std::unique_ptr<PendingRequest> pending) {
  pending->arrival = ctx_.clock->Now();
  {
    MutexLock lock(tracker_->mu);
    if (tracker_->stopping) {
      lock.Unlock();
      FailPending(ctx_, *pending, FailReason::kRejected,
                  Unavailable("ensemble '" + ctx_.model.name + "' is unloading"));
      return;
    }
    tracker_->runs++;
  }
  auto run = std::make_shared<Run>();
  run->tracker = tracker_;
  // The ensemble request's inputs become the first tensors; the request
  // itself (owned by the run) keeps their bytes alive.
  std::shared_ptr<InferRequest> request(std::move(pending->request));
  pending->request = std::make_unique<InferRequest>();
  pending->request->id = request->id;
  pending->request->outputs = request->outputs;
  pending->request->cancel_flag = request->cancel_flag;
  pending->request->batch_size = request->batch_size;
  // The trace goes with the request the run answers (the original one may
  // live on in the steps' inputs).
  pending->request->trace = std::move(request->trace);
  pending->request->Hold(request);
  std::vector<size_t> ready;
  {
    MutexLock lock(run->mu);
    run->launched.assign(steps_.size(), false);
    for (const auto& in : request->inputs) {
      run->tensors[in.name] = Run::Tensor{in.datatype, in.shape, in.data, request};
    }
    run->pending = std::move(pending);
    for (size_t i = 0; i < steps_.size(); ++i) {
      bool ok = true;
      for (const auto& [in, tensor] : steps_[i].input_map) ok = ok && run->tensors.count(tensor);
      if (ok) {
        run->launched[i] = true;
        ready.push_back(i);
      }
    }
  }
  for (size_t i : ready) Launch(run, i);
}

void EnsembleScheduler::Launch(const std::shared_ptr<Run>& run, size_t index) {
  const EnsembleStep& step = steps_[index];
  auto req = std::make_unique<InferRequest>();
  req->model_name = step.model_name;
  req->model_version = step.model_version;
  // One response per step: a decoupled composing model is refused before it
  // runs (checked per request: composing models may load after the ensemble).
  req->decoupled_refusal =
      "ensembles do not support decoupled composing models (model_transaction_policy "
      "decoupled: true)";
  {
    MutexLock lock(run->mu);
    if (!run->pending) return;  // already failed
    req->id = run->pending->request->id;
    req->cancel_flag = run->pending->request->cancel_flag;
    // A traced ensemble traces each step as a child (parent_id: the ensemble's).
    if (const auto& parent = run->pending->request->trace) {
      req->trace = trace::RequestTrace::Child(parent, step.model_name);
    }
    for (const auto& [input, tensor] : step.input_map) {
      const Run::Tensor& t = run->tensors.at(tensor);
      req->inputs.push_back(InferInput{input, t.datatype, t.shape, t.data});
      req->Hold(t.owner);
    }
  }
  for (const auto& [output, tensor] : step.output_map) req->outputs.push_back({output, 0});
  infer_(std::move(req), std::make_unique<StepSink>(this, run, index));
}

void EnsembleScheduler::OnStepDone(const std::shared_ptr<Run>& run, size_t index,
                                   const Status& status, std::unique_ptr<InferResponse> response) {
  const EnsembleStep& step = steps_[index];
  if (!status.ok()) {
    return Complete(run, status.WithPrefix("in ensemble '" + ctx_.model.name + "', step '" +
                                           step.model_name + "'"));
  }
  std::shared_ptr<InferResponse> owner(std::move(response));
  for (const auto& [output, tensor] : step.output_map) {
    if (owner->FindOutput(output) == nullptr) {
      return Complete(run, Internal("in ensemble '" + ctx_.model.name + "', step '" +
                                    step.model_name + "' did not produce output '" + output + "'"));
    }
  }
  std::vector<size_t> ready;
  bool all_done = false;
  {
    MutexLock lock(run->mu);
    if (!run->pending) return;
    for (const auto& [output, tensor] : step.output_map) {
      const InferOutput* o = owner->FindOutput(output);
      run->tensors[tensor] = Run::Tensor{o->datatype, o->shape, o->buffer.view(), owner};
    }
    run->steps_done++;
    for (size_t i = 0; i < steps_.size(); ++i) {
      if (run->launched[i]) continue;
      bool ok = true;
      for (const auto& [in, tensor] : steps_[i].input_map) ok = ok && run->tensors.count(tensor);
      if (ok) {
        run->launched[i] = true;
        ready.push_back(i);
      }
    }
    all_done = run->steps_done == steps_.size();
  }
  for (size_t i : ready) Launch(run, i);
  if (all_done) Complete(run, Status::Ok());
}

void EnsembleScheduler::Complete(const std::shared_ptr<Run>& run, Status status) {
  std::unique_ptr<PendingRequest> pending;
  std::unique_ptr<InferResponse> response;
  {
    MutexLock lock(run->mu);
    if (!run->pending) return;
    pending = std::move(run->pending);
    if (status.ok()) {
      response = std::make_unique<InferResponse>();
      response->model_name = ctx_.model.name;
      response->model_version = ctx_.model.version;
      response->id = pending->request->id;
      const auto& wanted = pending->request->outputs;
      for (const auto& out : spec_.outputs) {
        if (!wanted.empty() &&
            std::none_of(wanted.begin(), wanted.end(),
                         [&](const RequestedOutput& w) { return w.name == out.name; })) {
          continue;
        }
        const Run::Tensor& t = run->tensors.at(out.name);
        auto& o = response->AddOutput(out.name, t.datatype, t.shape, t.data.byte_size);
        if (t.data.byte_size) std::memcpy(o.buffer.data(), t.data.data, t.data.byte_size);
      }
    }
  }
  // The classification extension applies to an ensemble's outputs as to any model's.
  if (status.ok()) status = ApplyClassification(spec_, *pending->request, *response);
  const auto now = ctx_.clock->Now();
  if (ctx_.stats) {
    if (status.ok()) {
      const uint64_t rows =
          static_cast<uint64_t>(std::max<int64_t>(1, pending->request->batch_size));
      ctx_.stats->RecordExecution(rows, 0, ElapsedNs(pending->arrival, now), 0);
      ctx_.stats->RecordSuccess(ElapsedNs(pending->arrival, now), 0);
    } else {
      ctx_.stats->RecordFailure(FailReason::kOther, ElapsedNs(pending->arrival, now));
    }
  }
  if (status.ok()) {
    pending->sink->Send(std::move(response), /*final=*/true);
  } else {
    pending->sink->Finish(std::move(status));
  }
}

}  // namespace inferd
