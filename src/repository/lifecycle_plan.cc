#include "repository/lifecycle_plan.h"

#include "repository/repository_scan.h"

namespace inferd {
namespace {

constexpr char kUnloaded[] = "unloaded";

ModelPlan Plan(const std::string& name, ModelAction action, std::string reason = "",
               bool poll_failure = false) {
  ModelPlan p;
  p.name = name;
  p.action = action;
  p.reason = std::move(reason);
  p.poll_failure = poll_failure;
  return p;
}

std::set<int64_t> ServingVersions(const LoadedModel& model) {
  std::set<int64_t> out;
  for (const auto& [v, vs] : model.versions) {
    if (Serves(vs.state)) out.insert(v);
  }
  return out;
}

// Nothing to do for a load without override: same content, no failure,
// and every version serving (a retired or failed version makes a load
// reload the model; an UNLOADING one is READY again once the plan's
// cancel_unload is applied).
bool Unchanged(const LoadedModel& model, const std::string& fingerprint) {
  if (model.fingerprint != fingerprint || !model.failure.empty() || model.versions.empty()) {
    return false;
  }
  return ServingVersions(model).size() == model.versions.size();
}

// A plan that concerns a recorded model cancels its pending delayed unload.
ModelPlan Cancelling(ModelPlan p, const LoadedModels& loaded) {
  auto record = loaded.find(p.name);
  p.cancel_unload = record != loaded.end() && IsUnloading(record->second);
  return p;
}

ModelPlan PlanLoad(const std::string& name, bool config_override, const SourceModels& source,
                   const LoadedModels& loaded) {
  if (!IsValidModelName(name))
    return Plan(name, ModelAction::kReject, "invalid model name '" + name + "'");
  auto listed = source.find(name);
  if (listed == source.end()) {
    return Plan(name, ModelAction::kReject, "no model of that name in the model repository",
                /*poll_failure=*/true);
  }
  if (!listed->second.problem.empty()) {
    return Cancelling(Plan(name, ModelAction::kFail, listed->second.problem, /*poll_failure=*/true),
                      loaded);
  }
  auto record = loaded.find(name);
  if (!config_override && record != loaded.end() &&
      Unchanged(record->second, listed->second.fingerprint)) {
    return Cancelling(Plan(name, ModelAction::kKeep), loaded);
  }
  return Cancelling(Plan(name, ModelAction::kLoad), loaded);
}

ModelPlan PlanUnload(const std::string& name, ModelAction action, bool delay,
                     const LoadedModels& loaded) {
  auto record = loaded.find(name);
  if (record == loaded.end()) return Plan(name, ModelAction::kKeep);
  // Already UNLOADING: the pending unload stands, with its own deadline.
  if (delay && IsUnloading(record->second)) return Plan(name, ModelAction::kKeep);
  ModelPlan p = Plan(name, action);
  p.retire = ServingVersions(record->second);
  p.delay = delay && !p.retire.empty();  // nothing serves: nothing to wait for
  return p;
}

std::vector<ModelPlan> PlanPoll(const SourceModels& source, const LoadedModels& loaded,
                                bool delay) {
  std::vector<ModelPlan> plans;
  for (const auto& [name, model] : loaded) {
    if (source.count(name) == 0) {
      plans.push_back(PlanUnload(name, ModelAction::kForget, delay, loaded));
    }
  }
  for (const auto& [name, listed] : source) {
    auto record = loaded.find(name);
    if (record != loaded.end() && !record->second.fingerprint.empty() &&
        record->second.fingerprint == listed.fingerprint) {
      plans.push_back(Cancelling(Plan(name, ModelAction::kKeep), loaded));
    } else {
      plans.push_back(PlanLoad(name, /*config_override=*/false, source, loaded));
    }
  }
  return plans;
}

}  // namespace

bool IsServing(const LoadedModel& model) { return !ServingVersions(model).empty(); }

bool IsUnloading(const LoadedModel& model) {
  for (const auto& [v, vs] : model.versions) {
    if (vs.state == ModelState::kUnloading) return true;
  }
  return false;
}

std::vector<ModelPlan> PlanModels(const LifecycleRequest& request, const SourceModels& source,
                                  const LoadedModels& loaded) {
  using Kind = LifecycleRequest::Kind;
  std::vector<ModelPlan> plans;
  switch (request.kind) {
    case Kind::kPoll:
      return PlanPoll(source, loaded, request.delay_unload);
    case Kind::kForget:
      for (const auto& name : request.names)
        plans.push_back(PlanUnload(name, ModelAction::kForget, false, loaded));
      return plans;
    case Kind::kStartup:
      if (request.all_listed) {
        for (const auto& [name, listed] : source) {
          plans.push_back(PlanLoad(name, false, source, loaded));
        }
      } else {
        for (const auto& name : request.names)
          plans.push_back(PlanLoad(name, false, source, loaded));
      }
      return plans;
    case Kind::kLoad:
    case Kind::kUnload:
      for (const auto& name : request.names) {
        plans.push_back(request.kind == Kind::kLoad
                            ? PlanLoad(name, request.config_override, source, loaded)
                            : PlanUnload(name, ModelAction::kUnload, request.delay_unload, loaded));
      }
      return plans;
  }
  return plans;
}

ModelPlan PlanVersions(const std::string& name, const PreparedModel& prepared,
                       const LoadedModel* loaded) {
  if (!prepared.error.empty()) {
    return Plan(name, ModelAction::kFail, prepared.error, prepared.unreadable);
  }
  if (prepared.wanted.empty()) {
    return Plan(
        name, ModelAction::kFail,
        "at least one version must be available under the version policy of model '" + name + "'");
  }
  ModelPlan p = Plan(name, ModelAction::kLoad);
  p.load = prepared.wanted;
  if (loaded != nullptr) {
    for (int64_t v : ServingVersions(*loaded)) {
      if (p.load.count(v) == 0) p.retire.insert(v);
    }
  }
  return p;
}

void MarkLoading(const ModelPlan& plan, LoadedModel& model) {
  model.failure.clear();
  for (int64_t v : plan.load) {
    VersionStatus& vs = model.versions[v];
    if (Serves(vs.state)) continue;
    vs.state = ModelState::kLoading;
    vs.reason.clear();
  }
}

std::string CommitLoad(const ModelPlan& plan, const std::map<int64_t, Status>& results,
                       const std::string& fingerprint, LoadedModel& model) {
  model.fingerprint = fingerprint;
  std::string errors;
  for (const auto& [v, result] : results) {
    VersionStatus& vs = model.versions[v];
    if (result.ok()) {
      vs.state = ModelState::kReady;
      vs.reason.clear();
      continue;
    }
    if (!errors.empty()) errors += "; ";
    errors += "version " + std::to_string(v) + ": " + result.message();
    if (!Serves(vs.state)) {  // else the older copy keeps serving
      vs.state = ModelState::kUnavailable;
      vs.reason = result.message();
    }
  }
  for (int64_t v : plan.retire)
    model.versions[v] = VersionStatus{ModelState::kUnavailable, kUnloaded};
  return errors;
}

void RecordFailure(const std::string& reason, LoadedModel& model) {
  if (!IsServing(model)) model.failure = reason;
}

void MarkUnloaded(LoadedModel& model) {
  for (auto& [v, vs] : model.versions) vs = VersionStatus{ModelState::kUnavailable, kUnloaded};
  model.fingerprint.clear();
  model.failure.clear();
}

void MarkUnloading(LoadedModel& model) {
  for (auto& [v, vs] : model.versions) {
    if (vs.state == ModelState::kReady) vs.state = ModelState::kUnloading;
  }
}

void CancelUnloading(LoadedModel& model) {
  for (auto& [v, vs] : model.versions) {
    if (vs.state == ModelState::kUnloading) vs.state = ModelState::kReady;
  }
}

}  // namespace inferd
