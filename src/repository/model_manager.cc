#include "repository/model_manager.h"

#include <algorithm>
#include <future>
#include <optional>

#include "core/log.h"
#include "core/sanitize.h"
#include "repository/model_files_source.h"
#include "repository/model_preparation.h"
#include "repository/repository_scan.h"

namespace inferd {
namespace {

std::string UnknownModel(const std::string& name) {
  return "Request for unknown model: '" + name + "'";
}

// Triton's two answers of a failed load: the model could not be read from
// the repository ("poll"), or it was read and did not load.
Status PollFailure(const std::string& name, const std::string& why) {
  return Internal("failed to load '" + name + "', failed to poll from model repository: " + why);
}

Status LoadFailure(const std::string& name, const std::string& why) {
  return InvalidArgument("load failed for model '" + name + "': " + why);
}

// A version holding what keeps its files on disk (a load call's files, a
// source's pin of a cache directory): that is released when the last
// holder of the version lets go, after the version itself is destroyed
// (members are destroyed in reverse order).
std::shared_ptr<ModelVersion> Holding(std::shared_ptr<ModelVersion> version,
                                      std::shared_ptr<const void> keep) {
  if (!keep) return version;
  struct Holder {
    std::shared_ptr<const void> keep;
    std::shared_ptr<ModelVersion> version;
  };
  auto holder = std::make_shared<Holder>(Holder{std::move(keep), std::move(version)});
  ModelVersion* raw = holder->version.get();
  return std::shared_ptr<ModelVersion>(std::move(holder), raw);
}

bool Concerns(const LifecycleRequest& request, const std::string& name) {
  if (request.kind == LifecycleRequest::Kind::kPoll || request.all_listed) return true;
  return std::find(request.names.begin(), request.names.end(), name) != request.names.end();
}

}  // namespace

ModelManager::ModelManager(ModelManagerOptions options) : options_(std::move(options)) {
  reaper_ = std::thread([this] { ReaperLoop(); });
  if (options_.unload_delay.count() > 0) delayer_ = std::thread([this] { DelayLoop(); });
}

ModelManager::~ModelManager() {
  {
    MutexLock lock(mu_);
    delayer_stop_ = true;
    hurry_ = true;  // the pending unloads are done now, their waiters answered
  }
  delayer_cv_.NotifyAll();
  if (delayer_.joinable()) delayer_.join();
  StopAll();
  {
    MutexLock lock(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.NotifyAll();
  reaper_.join();
}

Status ModelManager::LoadStartupModels() {
  using Kind = LifecycleRequest::Kind;
  const bool all = options_.mode != ModelControlMode::kExplicit ||
                   (options_.startup_models.size() == 1 && options_.startup_models[0] == "*");
  LifecycleRequest request{Kind::kStartup,
                           all ? std::vector<std::string>{} : options_.startup_models, all};
  MutexLock load_lock(load_mu_);
  auto source = Observe(request);
  if (!source.ok()) return source.status();
  const std::optional<std::string> no_config;
  const LoadInput input{*options_.source, no_config, nullptr};
  if (all) return Execute(request, *source, input);
  // One name at a time: a name given twice sees what the first load did.
  Status first;
  for (const auto& name : options_.startup_models) {
    Status s = Execute(LifecycleRequest{Kind::kStartup, {name}, false, false}, *source, input);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status ModelManager::Load(const std::string& name, const std::optional<std::string>& config_json,
                          const ModelFiles& files) {
  if (!files.empty()) return LoadFiles(name, config_json, files);
  LifecycleRequest request{LifecycleRequest::Kind::kLoad, {name}, false, config_json.has_value()};
  MutexLock load_lock(load_mu_);
  auto source = Observe(request);
  if (!source.ok()) return PollFailure(name, source.status().message());
  return Execute(request, *source, LoadInput{*options_.source, config_json, nullptr});
}

// The files stand for the repository: the model is listed by a source of
// its own, with a fingerprint no earlier load had, so the plan loads it.
Status ModelManager::LoadFiles(const std::string& name,
                               const std::optional<std::string>& config_json,
                               const ModelFiles& files) {
  if (!config_json) {
    return InvalidArgument("Load parameter 'config' must be specified for model file override");
  }
  auto written = ModelFileDirectory::Write(files);
  if (!written.ok()) {
    if (written.status().code() == StatusCode::kInvalidArgument) return written.status();
    return PollFailure(name, written.status().message());
  }
  ModelFilesSource source(name, *written);
  LifecycleRequest request{LifecycleRequest::Kind::kLoad, {name}, false, true};
  auto fingerprint = source.Fingerprint(name);
  const SourceModels observed{{name, SourceModel{"", *fingerprint}}};
  MutexLock load_lock(load_mu_);
  return Execute(request, observed, LoadInput{source, config_json, *written});
}

void ModelManager::Unload(const std::string& name, UnloadDone done) {
  Status s;
  {
    MutexLock load_lock(load_mu_);
    const std::optional<std::string> no_config;
    LifecycleRequest request{LifecycleRequest::Kind::kUnload, {name}, false, false};
    request.delay_unload = options_.unload_delay.count() > 0;
    s = Execute(request, {}, LoadInput{*options_.source, no_config, nullptr});
    MutexLock lock(mu_);
    if (auto pending = pending_.find(name); s.ok() && pending != pending_.end()) {
      pending->second.waiters.push_back(std::move(done));  // answered when it is done
      return;
    }
  }
  done(std::move(s));
}

Status ModelManager::Unload(const std::string& name) {
  std::promise<Status> answer;
  auto unloaded = answer.get_future();
  Unload(name, [&answer](Status s) { answer.set_value(std::move(s)); });
  return unloaded.get();
}

Status ModelManager::PollOnce() {
  LifecycleRequest request;
  request.kind = LifecycleRequest::Kind::kPoll;
  request.delay_unload = options_.unload_delay.count() > 0;
  MutexLock load_lock(load_mu_);
  auto source = Observe(request);
  if (!source.ok()) return source.status();  // unreadable now; the next pass retries
  const std::optional<std::string> no_config;
  (void)Execute(request, *source, LoadInput{*options_.source, no_config, nullptr});
  return Status::Ok();
}

StatusOr<SourceModels> ModelManager::Observe(const LifecycleRequest& request) {
  SourceModels out;
  if (request.kind == LifecycleRequest::Kind::kUnload) return out;
  // An invalid name is refused before the repository is looked at.
  if (request.kind == LifecycleRequest::Kind::kLoad && !IsValidModelName(request.names.at(0))) {
    return out;
  }
  auto listed = options_.source->ListModels();
  if (!listed.ok()) return listed.status();
  for (auto& [name, listing] : *listed) {
    SourceModel model{std::move(listing.problem), ""};
    if (model.problem.empty() && Concerns(request, name)) {
      auto fingerprint = options_.source->Fingerprint(name);
      if (fingerprint.ok()) {
        model.fingerprint = std::move(*fingerprint);
      } else {
        model.problem = fingerprint.status().message();
      }
    }
    out.emplace(name, std::move(model));
  }
  return out;
}

Status ModelManager::Execute(const LifecycleRequest& request, const SourceModels& source,
                             const LoadInput& input) {
  Status first;
  const LoadedModels snapshot = Snapshot();
  for (const ModelPlan& plan : PlanModels(request, source, snapshot)) {
    if (options_.residency && request.kind == LifecycleRequest::Kind::kPoll &&
        plan.action == ModelAction::kLoad) {
      // With a memory budget, a poll pass reloads changed models that serve;
      // the others load when a request asks for them.
      auto record = snapshot.find(plan.name);
      if (record == snapshot.end() || !IsServing(record->second)) continue;
    }
    Status s = Apply(plan, source, input);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

LoadedModels ModelManager::Snapshot() const {
  LoadedModels out;
  MutexLock lock(mu_);
  for (const auto& [name, rec] : models_) out.emplace(name, Observed(rec));
  return out;
}

LoadedModel ModelManager::Observed(const ModelRecord& rec) {
  LoadedModel out = rec.status;
  for (const auto& [v, runtime] : rec.runtimes) {
    if (runtime == nullptr || !runtime->failed()) continue;
    auto it = out.versions.find(v);
    if (it != out.versions.end() && Serves(it->second.state)) {
      it->second = VersionStatus{ModelState::kUnavailable, runtime->unavailable_reason()};
    }
  }
  return out;
}

Status ModelManager::Apply(const ModelPlan& plan, const SourceModels& source,
                           const LoadInput& input) {
  if (plan.cancel_unload) CancelUnload(plan.name);
  switch (plan.action) {
    case ModelAction::kKeep:
      return Status::Ok();
    case ModelAction::kReject:
      return plan.poll_failure ? PollFailure(plan.name, plan.reason) : InvalidArgument(plan.reason);
    case ModelAction::kFail:
      return ApplyFailure(plan);
    case ModelAction::kUnload:
    case ModelAction::kForget:
      if (plan.delay) {
        ApplyUnloadLater(plan);
      } else {
        ApplyUnload(plan);
      }
      return Status::Ok();
    case ModelAction::kLoad:
      return ApplyLoad(plan.name, source.at(plan.name).fingerprint, input);
  }
  return Internal("unknown lifecycle action");
}

Status ModelManager::ApplyFailure(const ModelPlan& plan, const std::string& fingerprint) {
  INFERD_VLOG(1) << "model '" << EscapeControl(plan.name)
                 << "' failed to load: " << EscapeControl(plan.reason);
  {
    MutexLock lock(mu_);
    ++load_failures_[plan.name];
    LoadedModel& status = models_[plan.name].status;
    RecordFailure(plan.reason, status);
    if (!fingerprint.empty()) status.fingerprint = fingerprint;
  }
  return plan.poll_failure ? PollFailure(plan.name, plan.reason)
                           : LoadFailure(plan.name, plan.reason);
}

void ModelManager::ApplyUnload(const ModelPlan& plan) {
  Retired retired;
  {
    MutexLock lock(mu_);
    auto it = models_.find(plan.name);
    if (it == models_.end()) return;
    for (auto& [v, runtime] : it->second.runtimes) retired.push_back(std::move(runtime));
    it->second.runtimes.clear();
    it->second.footprints.clear();
    MarkUnloaded(it->second.status);
    if (plan.action == ModelAction::kForget) models_.erase(it);
  }
  INFERD_VLOG(1) << "model '" << EscapeControl(plan.name) << "' "
                 << (plan.action == ModelAction::kForget ? "left the repository: unloaded"
                                                         : "unloaded");
  Retire(std::move(retired));
}

Status ModelManager::ApplyLoad(const std::string& name, const std::string& fingerprint,
                               const LoadInput& input) {
  NormalizeOptions normalize;
  normalize.gpu_count = options_.gpu_count;
  PythonAutoCompleteOptions python;  // the Python backend's stub, next to its library
  python.enabled = options_.auto_complete_config;
  if (options_.registry != nullptr && !options_.registry->backend_directory().empty()) {
    python.stub_directory = options_.registry->backend_directory() + "/python";
  }
  PreparedConfig prepared = PrepareModel(input.source, name, input.config_json, normalize, python);
  for (const auto& w : prepared.warnings) {
    INFERD_LOG(Warning) << "model '" << EscapeControl(name) << "': " << EscapeControl(w);
  }
  ModelPlan plan;
  {
    MutexLock lock(mu_);
    auto it = models_.find(name);
    plan = PlanVersions(name, prepared.plan, it == models_.end() ? nullptr : &it->second.status);
    if (plan.action == ModelAction::kLoad) MarkLoading(plan, models_[name].status);
  }
  if (plan.action != ModelAction::kLoad) {
    // A config that failed for good is not read again by every poll pass
    // (a GET per pass from a remote store) until the model changes; one
    // the source failed to read is.
    return ApplyFailure(plan, prepared.plan.transient ? std::string() : fingerprint);
  }
  bool retry = false;
  Footprints footprints;
  LoadResults results = LoadVersions(plan, prepared.config, input, retry, footprints);
  MakeRoom(name, footprints);
  // No fingerprint is recorded for a load whose files could not be fetched
  // (a store that failed, an object deleted meanwhile): the next poll tries
  // again although nothing changed in the repository. Nor for a load with a
  // config override: what serves is not what the repository holds, so a
  // later load without override reads the repository again.
  const bool from_repository = !retry && !input.config_json;
  return Commit(plan, from_repository ? fingerprint : std::string(), std::move(results),
                footprints);
}

ModelManager::LoadResults ModelManager::LoadVersions(const ModelPlan& plan,
                                                     const inference::ModelConfig& config,
                                                     const LoadInput& input, bool& retry,
                                                     Footprints& footprints) {
  LoadResults results;
  auto directory = input.source.Materialize(plan.name, plan.load);
  // A key that can never be a file stays failed until the model changes;
  // anything else (unreachable, timeout, deleted meanwhile, disk full) may
  // pass next time.
  retry = !directory.ok() && directory.status().code() != StatusCode::kInvalidArgument;
  std::shared_ptr<const void> pin;
  if (directory.ok()) pin = input.source.Pin(plan.name, *directory);
  for (int64_t v : plan.load) {
    if (!directory.ok()) {
      results.emplace(v, directory.status());
      continue;
    }
    INFERD_VLOG(1) << "loading model '" << EscapeControl(plan.name) << "' version " << v << " from "
                   << EscapeControl(*directory);
    VersionServices services;
    services.registry = options_.registry;
    services.clock = options_.clock;
    services.histograms = options_.histograms;
    services.ensemble_infer = options_.ensemble_infer;
    services.response_cache = options_.response_cache;
    services.rate_limiter = options_.rate_limiter;
    uint64_t footprint = 0;
    auto loaded = LoadMeasured(config, *directory, v, services, footprint);
    if (loaded.ok()) {
      if (options_.residency) footprints[v] = footprint;
      INFERD_VLOG(1) << "model '" << EscapeControl(plan.name) << "' version " << v
                     << " is READY (loaded in " << (*loaded)->load_seconds() << " s)";
      std::shared_ptr<const void> keep = input.files;
      loaded = Holding(std::move(*loaded), keep ? keep : pin);
    } else {
      INFERD_VLOG(1) << "model '" << EscapeControl(plan.name) << "' version " << v
                     << " failed to load: " << EscapeControl(loaded.status().message());
    }
    if (!loaded.ok() && input.files) {  // the temporary directory is no client's business
      loaded = Status(loaded.status().code(),
                      RedactPaths(loaded.status().message(), {input.files->path()}));
    }
    results.emplace(v, std::move(loaded));
  }
  return results;
}

Status ModelManager::Commit(const ModelPlan& plan, const std::string& fingerprint,
                            LoadResults results, const Footprints& footprints) {
  Retired retired;
  std::string errors;
  {
    MutexLock lock(mu_);
    ModelRecord& rec = models_[plan.name];
    std::map<int64_t, Status> outcome;
    for (const auto& [v, result] : results) outcome.emplace(v, result.status());
    errors = CommitLoad(plan, outcome, fingerprint, rec.status);
    if (!errors.empty()) ++load_failures_[plan.name];  // one failed attempt, however many versions
    // entry, not a structured binding: clang-tidy 14 does not see the move
    // out of `results` through one (performance-unnecessary-value-param).
    for (auto& entry : results) {
      StatusOr<std::shared_ptr<ModelVersion>>& result = entry.second;
      if (!result.ok()) continue;
      auto& slot = rec.runtimes[entry.first];
      if (slot) retired.push_back(std::move(slot));
      slot = std::move(*result);
      if (auto f = footprints.find(entry.first); f != footprints.end()) {
        rec.footprints[entry.first] = f->second;
      }
    }
    for (int64_t v : plan.retire) {
      auto it = rec.runtimes.find(v);
      if (it == rec.runtimes.end()) continue;
      INFERD_VLOG(1) << "model '" << EscapeControl(plan.name) << "' version " << v
                     << " is no longer wanted: unloaded";
      retired.push_back(std::move(it->second));
      rec.runtimes.erase(it);
      rec.footprints.erase(v);
    }
  }
  Retire(std::move(retired));
  if (!errors.empty()) {
    return LoadFailure(plan.name, errors);
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<ModelVersion>> ModelManager::Get(const std::string& name,
                                                          int64_t version) const {
  MutexLock lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.status.versions.empty()) {
    return NotFound(UnknownModel(name) + " is not found");
  }
  const auto& versions = it->second.status.versions;
  const auto& runtimes = it->second.runtimes;
  // A version its backend marked unavailable is refused with the reason.
  auto failed = [&](int64_t v, const ModelVersion& runtime) {
    return Unavailable(UnknownModel(name) + " version " + std::to_string(v) +
                       " is not at ready state: " + runtime.unavailable_reason());
  };
  if (version < 0) {
    // The highest READY version; else the highest still serving (UNLOADING).
    std::optional<Status> refused;
    for (ModelState state : {ModelState::kReady, ModelState::kUnloading}) {
      for (auto v = versions.rbegin(); v != versions.rend(); ++v) {
        auto runtime = runtimes.find(v->first);
        if (v->second.state != state || runtime == runtimes.end()) continue;
        if (runtime->second->failed()) {
          if (!refused) refused = failed(v->first, *runtime->second);
          continue;
        }
        return runtime->second;
      }
    }
    if (refused) return *refused;
    return NotFound(UnknownModel(name) + " has no available versions");
  }
  auto v = versions.find(version);
  if (v == versions.end()) {
    return NotFound(UnknownModel(name) + " version " + std::to_string(version) + " is not found");
  }
  auto runtime = runtimes.find(version);
  if (!Serves(v->second.state) || runtime == runtimes.end()) {
    return Unavailable(UnknownModel(name) + " version " + std::to_string(version) +
                       " is not at ready state");
  }
  if (runtime->second->failed()) return failed(version, *runtime->second);
  return runtime->second;
}

std::vector<std::shared_ptr<ModelVersion>> ModelManager::ServingVersionsOf(
    const std::string& name) const {
  std::vector<std::shared_ptr<ModelVersion>> out;
  MutexLock lock(mu_);
  for (const auto& [model, rec] : models_) {
    if (!name.empty() && model != name) continue;
    for (const auto& [v, vs] : Observed(rec).versions) {
      auto runtime = rec.runtimes.find(v);
      if (Serves(vs.state) && runtime != rec.runtimes.end()) {
        out.push_back(runtime->second);
      }
    }
  }
  return out;
}

bool ModelManager::Knows(const std::string& name) const {
  MutexLock lock(mu_);
  return models_.count(name) > 0;
}

bool ModelManager::IsReady(const std::string& name, int64_t version) const {
  MutexLock lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return false;
  for (const auto& [v, vs] : Observed(it->second).versions) {
    if ((version < 0 || v == version) && vs.state == ModelState::kReady) return true;
  }
  return false;
}

std::vector<int64_t> ModelManager::ServingVersions(const std::string& name) const {
  std::vector<int64_t> out;
  MutexLock lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return out;
  for (const auto& [v, vs] : Observed(it->second).versions) {
    if (Serves(vs.state)) out.push_back(v);
  }
  return out;
}

std::vector<ModelIndexEntry> ModelManager::Index(bool ready_only) const {
  std::vector<ModelIndexEntry> out;
  auto listed = options_.source->ListModels();
  MutexLock lock(mu_);
  if (listed.ok() && !ready_only) {
    for (const auto& [name, listing] : *listed) {
      if (models_.count(name) == 0) {
        out.push_back(ModelIndexEntry{name, {}, ModelState::kUnknown, ""});
      }
    }
  }
  for (const auto& [name, rec] : models_) {
    if (!rec.status.failure.empty() && !ready_only) {
      out.push_back(ModelIndexEntry{name, {}, ModelState::kUnavailable, rec.status.failure});
    }
    for (const auto& [v, vs] : Observed(rec).versions) {
      if (ready_only && vs.state != ModelState::kReady) continue;
      std::string reason = vs.reason;
      // A serving version's reason: the config fields it accepted without effect.
      if (auto rt = rec.runtimes.find(v); reason.empty() && rt != rec.runtimes.end()) {
        reason = rt->second->config_warnings();
      }
      ModelIndexEntry entry{name, v, vs.state, std::move(reason)};
      if (auto f = rec.footprints.find(v); Serves(vs.state) && f != rec.footprints.end()) {
        entry.memory_bytes = f->second;
      }
      if (auto rt = rec.runtimes.find(v); Serves(vs.state) && rt != rec.runtimes.end()) {
        entry.layout = rt->second->layout();
      }
      out.push_back(std::move(entry));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

bool ModelManager::AllReady() const {
  MutexLock lock(mu_);
  for (const auto& [name, rec] : models_) {
    if (!rec.status.failure.empty()) return false;
    for (const auto& [v, vs] : Observed(rec).versions) {
      // Unloaded and evicted (--model-memory-budget) versions left on purpose.
      if (!Serves(vs.state) && vs.reason != "unloaded" && vs.reason.rfind("evicted:", 0) != 0) {
        return false;
      }
    }
  }
  return true;
}

std::map<std::string, uint64_t> ModelManager::LoadFailureCounts() const {
  MutexLock lock(mu_);
  return load_failures_;
}

void ModelManager::StopAll() {
  Retired runtimes;
  {
    MutexLock lock(mu_);
    for (auto& [name, rec] : models_) {
      for (auto& [v, runtime] : rec.runtimes) runtimes.push_back(runtime);
    }
  }
  for (auto& r : runtimes) r->Stop();
}

void ModelManager::Retire(Retired runtimes) {
  {
    MutexLock lock(reaper_mu_);
    for (auto& r : runtimes) {
      if (r) retired_.push_back(std::move(r));
    }
  }
  reaper_cv_.NotifyOne();
}

void ModelManager::ReaperLoop() {
  for (;;) {
    std::shared_ptr<ModelVersion> r;
    {
      MutexLock lock(reaper_mu_);
      while (!reaper_stop_ && retired_.empty()) reaper_cv_.Wait(lock);
      if (retired_.empty()) return;
      r = std::move(retired_.front());
      retired_.pop_front();
      reaper_busy_ = true;
    }
    r->Stop();  // in-flight requests finish; the last holder frees it
    r.reset();
    {
      MutexLock lock(reaper_mu_);
      reaper_busy_ = false;
    }
    reaper_idle_cv_.NotifyAll();
  }
}

void ModelManager::AwaitReaperIdle(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  MutexLock lock(reaper_mu_);
  while (!reaper_stop_ && (reaper_busy_ || !retired_.empty())) {
    if (!reaper_idle_cv_.WaitUntil(lock, deadline)) return;
  }
}

}  // namespace inferd
