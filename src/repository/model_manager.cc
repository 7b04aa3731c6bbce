#include "repository/model_manager.h"

#include <fstream>
#include <sstream>

#include "repository/model_config_util.h"
#include "repository/repository_scan.h"
#include "repository/version_policy.h"

namespace inferd {
namespace {

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string UnknownModel(const std::string& name) {
  return "Request for unknown model: '" + name + "'";
}

}  // namespace

ModelManager::ModelManager(ModelManagerOptions options) : options_(std::move(options)) {
  reaper_ = std::thread([this] { ReaperLoop(); });
}

ModelManager::~ModelManager() {
  StopAll();
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  reaper_.join();
}

Status ModelManager::LoadStartupModels() {
  auto scan = ScanRepositories(options_.repositories);
  if (!scan.ok()) return scan.status();
  std::vector<std::string> names;
  const bool all = options_.mode != ModelControlMode::kExplicit ||
                   (options_.startup_models.size() == 1 && options_.startup_models[0] == "*");
  if (all) {
    for (const auto& [name, loc] : *scan) names.push_back(name);
  } else {
    names = options_.startup_models;
  }
  Status first;
  std::lock_guard<std::mutex> load_lock(load_mu_);
  for (const auto& name : names) {
    Status s = LoadLocked(name, std::nullopt);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status ModelManager::Load(const std::string& name, const std::optional<std::string>& config_json) {
  std::lock_guard<std::mutex> load_lock(load_mu_);
  return LoadLocked(name, config_json);
}

Status ModelManager::LoadLocked(const std::string& name,
                                const std::optional<std::string>& config_json) {
  auto fail = [&](const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    ++load_failures_[name];
    auto& rec = models_[name];
    bool serving = false;
    for (auto& [v, vr] : rec.versions) serving = serving || vr.state == ModelState::kReady;
    if (!serving) rec.failure = s.message();  // a failed reload keeps old versions serving
    return InvalidArgument("load failed for model '" + name + "': " + s.message());
  };
  if (!IsValidModelName(name)) {
    return InvalidArgument("invalid model name '" + name + "'");
  }
  auto scan = ScanRepositories(options_.repositories);
  if (!scan.ok()) return scan.status();
  auto it = scan->find(name);
  if (it == scan->end()) {
    return InvalidArgument("load failed for model '" + name +
                           "': no model of that name in the model repository");
  }
  const ModelLocation& loc = it->second;
  if (!loc.problem.empty()) return fail(Status(StatusCode::kInvalidArgument, loc.problem));

  const std::string fingerprint = FingerprintModelDirectory(loc.directory);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto rec = models_.find(name);
    if (!config_json && rec != models_.end() && rec->second.fingerprint == fingerprint &&
        rec->second.failure.empty() && !rec->second.versions.empty()) {
      bool all_ready = true;
      for (auto& [v, vr] : rec->second.versions)
        all_ready = all_ready && vr.state == ModelState::kReady;
      if (all_ready) return Status::Ok();  // nothing changed
    }
  }

  StatusOr<inference::ModelConfig> config = Internal("unset");
  if (config_json) {
    config = ParseModelConfigJson(*config_json);
  } else {
    const std::string path = loc.directory + "/config.pbtxt";
    auto text = ReadFile(path);
    if (!text.ok()) return fail(NotFound("model '" + name + "' has no config.pbtxt"));
    config = ParseModelConfigText(*text, name + "/config.pbtxt");
  }
  if (!config.ok()) return fail(config.status());
  NormalizeOptions nopts;
  nopts.gpu_count = options_.gpu_count;
  Status norm = NormalizeModelConfig(name, nopts, *config);
  if (!norm.ok()) return fail(norm.WithPrefix(name + "/config.pbtxt"));

  const std::set<int64_t> wanted =
      VersionsToLoad(config->version_policy(), ScanVersions(loc.directory));
  if (wanted.empty()) {
    return fail(
        InvalidArgument("at least one version must be available under the version "
                        "policy of model '" +
                        name + "'"));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& rec = models_[name];
    rec.failure.clear();
    for (int64_t v : wanted) {
      auto& vr = rec.versions[v];
      if (vr.state != ModelState::kReady) vr.state = ModelState::kLoading;
    }
  }
  std::map<int64_t, StatusOr<std::shared_ptr<ModelVersion>>> loaded;
  for (int64_t v : wanted) {
    loaded.emplace(
        v, ModelVersion::Load(*config, loc.directory, v, *options_.registry, RealClock::Get(),
                              options_.histograms, options_.ensemble_infer));
  }

  std::vector<std::shared_ptr<ModelVersion>> to_retire;
  std::string errors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& rec = models_[name];
    rec.fingerprint = fingerprint;
    for (auto& [v, result] : loaded) {
      auto& vr = rec.versions[v];
      if (result.ok()) {
        if (vr.runtime) to_retire.push_back(std::move(vr.runtime));
        vr.runtime = std::move(*result);
        vr.state = ModelState::kReady;
        vr.reason.clear();
      } else {
        if (errors.empty()) ++load_failures_[name];  // one failed attempt, however many versions
        if (!errors.empty()) errors += "; ";
        errors += "version " + std::to_string(v) + ": " + result.status().message();
        if (vr.runtime) {
          vr.state = ModelState::kReady;  // keep the old version serving
        } else {
          vr.state = ModelState::kUnavailable;
          vr.reason = result.status().message();
        }
      }
    }
    for (auto& [v, vr] : rec.versions) {
      if (wanted.count(v) == 0 && vr.state == ModelState::kReady) {
        to_retire.push_back(std::move(vr.runtime));
        vr.state = ModelState::kUnavailable;
        vr.reason = "unloaded";
      }
    }
  }
  for (auto& r : to_retire) Retire(std::move(r));
  if (!errors.empty()) {
    return InvalidArgument("load failed for model '" + name + "': " + errors);
  }
  return Status::Ok();
}

Status ModelManager::Unload(const std::string& name) {
  std::lock_guard<std::mutex> load_lock(load_mu_);
  UnloadLocked(name, /*forget=*/false);
  return Status::Ok();
}

void ModelManager::UnloadLocked(const std::string& name, bool forget) {
  std::vector<std::shared_ptr<ModelVersion>> to_retire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return;
    for (auto& [v, vr] : it->second.versions) {
      if (vr.runtime) to_retire.push_back(std::move(vr.runtime));
      vr.state = ModelState::kUnavailable;
      vr.reason = "unloaded";
    }
    it->second.fingerprint.clear();
    it->second.failure.clear();
    if (forget) models_.erase(it);
  }
  for (auto& r : to_retire) Retire(std::move(r));
}

void ModelManager::PollOnce() {
  auto scan = ScanRepositories(options_.repositories);
  if (!scan.ok()) return;
  std::lock_guard<std::mutex> load_lock(load_mu_);
  std::vector<std::string> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, rec] : models_) known.push_back(name);
  }
  for (const auto& name : known) {
    if (scan->count(name) == 0) UnloadLocked(name, /*forget=*/true);
  }
  for (const auto& [name, loc] : *scan) {
    std::string previous;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = models_.find(name);
      if (it != models_.end()) previous = it->second.fingerprint;
    }
    if (previous.empty() || previous != FingerprintModelDirectory(loc.directory)) {
      (void)LoadLocked(name, std::nullopt);
    }
  }
}

StatusOr<std::shared_ptr<ModelVersion>> ModelManager::Get(const std::string& name,
                                                          int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.versions.empty()) {
    return NotFound(UnknownModel(name) + " is not found");
  }
  const auto& versions = it->second.versions;
  if (version < 0) {
    for (auto v = versions.rbegin(); v != versions.rend(); ++v) {
      if (v->second.state == ModelState::kReady && v->second.runtime) return v->second.runtime;
    }
    return NotFound(UnknownModel(name) + " has no available versions");
  }
  auto v = versions.find(version);
  if (v == versions.end()) {
    return NotFound(UnknownModel(name) + " version " + std::to_string(version) + " is not found");
  }
  if (v->second.state != ModelState::kReady || !v->second.runtime) {
    return Unavailable(UnknownModel(name) + " version " + std::to_string(version) +
                       " is not at ready state");
  }
  return v->second.runtime;
}

std::vector<std::shared_ptr<ModelVersion>> ModelManager::ReadyVersionsOf(
    const std::string& name) const {
  std::vector<std::shared_ptr<ModelVersion>> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [model, rec] : models_) {
    if (!name.empty() && model != name) continue;
    for (const auto& [v, vr] : rec.versions) {
      if (vr.state == ModelState::kReady && vr.runtime) out.push_back(vr.runtime);
    }
  }
  return out;
}

bool ModelManager::Knows(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return models_.count(name) > 0;
}

std::vector<int64_t> ModelManager::ReadyVersions(const std::string& name) const {
  std::vector<int64_t> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return out;
  for (const auto& [v, vr] : it->second.versions) {
    if (vr.state == ModelState::kReady) out.push_back(v);
  }
  return out;
}

std::vector<ModelIndexEntry> ModelManager::Index(bool ready_only) const {
  std::vector<ModelIndexEntry> out;
  auto scan = ScanRepositories(options_.repositories);
  std::lock_guard<std::mutex> lock(mu_);
  if (scan.ok()) {
    for (const auto& [name, loc] : *scan) {
      auto it = models_.find(name);
      if (it == models_.end() && !ready_only)
        out.push_back(ModelIndexEntry{name, {}, ModelState::kUnknown, ""});
    }
  }
  for (const auto& [name, rec] : models_) {
    if (!rec.failure.empty() && !ready_only) {
      out.push_back(ModelIndexEntry{name, {}, ModelState::kUnavailable, rec.failure});
    }
    for (const auto& [v, vr] : rec.versions) {
      if (ready_only && vr.state != ModelState::kReady) continue;
      out.push_back(ModelIndexEntry{name, v, vr.state, vr.reason});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

bool ModelManager::AllReady() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, rec] : models_) {
    if (!rec.failure.empty()) return false;
    for (const auto& [v, vr] : rec.versions) {
      if (vr.state != ModelState::kReady && vr.reason != "unloaded") return false;
    }
  }
  return true;
}

std::map<std::string, uint64_t> ModelManager::LoadFailureCounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return load_failures_;
}

void ModelManager::StopAll() {
  std::vector<std::shared_ptr<ModelVersion>> runtimes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, rec] : models_) {
      for (auto& [v, vr] : rec.versions) {
        if (vr.runtime) runtimes.push_back(vr.runtime);
      }
    }
  }
  for (auto& r : runtimes) r->Stop();
}

void ModelManager::Retire(std::shared_ptr<ModelVersion> runtime) {
  if (!runtime) return;
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    retired_.push_back(std::move(runtime));
  }
  reaper_cv_.notify_one();
}

void ModelManager::ReaperLoop() {
  for (;;) {
    std::shared_ptr<ModelVersion> r;
    {
      std::unique_lock<std::mutex> lock(reaper_mu_);
      reaper_cv_.wait(lock, [&] { return reaper_stop_ || !retired_.empty(); });
      if (retired_.empty()) return;
      r = std::move(retired_.front());
      retired_.pop_front();
    }
    r->Stop();  // in-flight requests finish; the last holder frees it
  }
}

}  // namespace inferd
