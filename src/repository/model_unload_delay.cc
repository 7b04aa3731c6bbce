// ModelManager's delayed unloads (--model-unload-delay-secs): a model to
// unload goes UNLOADING (not ready, still serving) and the delayer thread
// unloads it when its delay is over, unless a load cancels it first. The
// delay lets whoever routes by the repository index or model readiness (a
// discovery service, a balancer) stop sending requests before they would
// fail.
#include <algorithm>

#include "core/log.h"
#include "core/sanitize.h"
#include "repository/model_manager.h"

namespace inferd {

void ModelManager::ApplyUnloadLater(const ModelPlan& plan) {
  {
    MutexLock lock(mu_);
    auto it = models_.find(plan.name);
    if (it == models_.end()) return;
    MarkUnloading(it->second.status);
    PendingUnload& pending = pending_[plan.name];
    pending.deadline = options_.clock->Now() + options_.unload_delay;
    pending.action = plan.action;
  }
  delayer_cv_.NotifyAll();
  INFERD_VLOG(1) << "model '" << EscapeControl(plan.name) << "' is UNLOADING"
                 << (plan.action == ModelAction::kForget ? " (it left the repository)" : "")
                 << "; unloaded in "
                 << std::chrono::duration_cast<std::chrono::seconds>(options_.unload_delay).count()
                 << " s";
}

void ModelManager::CancelUnload(const std::string& name) {
  std::vector<UnloadDone> waiters;
  {
    MutexLock lock(mu_);
    auto model = models_.find(name);
    if (model != models_.end()) CancelUnloading(model->second.status);
    auto pending = pending_.find(name);
    if (pending != pending_.end()) {
      waiters = std::move(pending->second.waiters);
      pending_.erase(pending);
    }
  }
  delayer_cv_.NotifyAll();
  INFERD_VLOG(1) << "model '" << EscapeControl(name)
                 << "' is READY again: its pending unload was cancelled";
  const Status cancelled(StatusCode::kAborted, "unload of model '" + name +
                                                   "' was cancelled: the model was loaded again "
                                                   "during its unload delay");
  for (auto& done : waiters) done(cancelled);
}

void ModelManager::EndUnloadDelays() {
  {
    MutexLock lock(mu_);
    hurry_ = true;
  }
  delayer_cv_.NotifyAll();
}

void ModelManager::AwaitUnloads() {
  MutexLock lock(mu_);
  while (!pending_.empty()) delayer_cv_.Wait(lock);
}

void ModelManager::DelayLoop() {
  MutexLock lock(mu_);
  for (;;) {
    if (pending_.empty()) {
      if (delayer_stop_) return;
      delayer_cv_.Wait(lock);
      continue;
    }
    auto due = std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
      return a.second.deadline < b.second.deadline;
    });
    if (!hurry_ && options_.clock->Now() < due->second.deadline) {
      options_.clock->WaitUntil(lock.native(), delayer_cv_.native(), due->second.deadline);
      continue;
    }
    const std::string name = due->first;
    lock.Unlock();
    UnloadDue(name);  // takes the load lock, which comes before mu_
    lock.Lock();
  }
}

void ModelManager::UnloadDue(const std::string& name) {
  MutexLock load_lock(load_mu_);
  LifecycleRequest request{LifecycleRequest::Kind::kUnload, {name}, false, false};
  {
    MutexLock lock(mu_);
    auto pending = pending_.find(name);
    // Cancelled, or cancelled and delayed anew, while the load lock was taken.
    if (pending == pending_.end()) return;
    if (!hurry_ && options_.clock->Now() < pending->second.deadline) return;
    if (pending->second.action == ModelAction::kForget) {
      request.kind = LifecycleRequest::Kind::kForget;
    }
  }
  const std::optional<std::string> no_config;
  Status s = Execute(request, {}, LoadInput{*options_.source, no_config, nullptr});
  std::vector<UnloadDone> waiters;
  {
    MutexLock lock(mu_);
    auto pending = pending_.find(name);
    if (pending != pending_.end()) {
      waiters = std::move(pending->second.waiters);
      pending_.erase(pending);
    }
  }
  delayer_cv_.NotifyAll();  // AwaitUnloads
  load_lock.Unlock();
  for (auto& done : waiters) done(s);
}

}  // namespace inferd
