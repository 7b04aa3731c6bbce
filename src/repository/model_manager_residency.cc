// ModelManager's part in --model-memory-budget (server/model_residency.h):
// measured loads, the footprints of what serves, eviction.
#include "core/log.h"
#include "core/sanitize.h"
#include "repository/model_config_util.h"
#include "repository/model_footprint.h"
#include "repository/model_manager.h"
#include "repository/residency_policy.h"

namespace inferd {

StatusOr<std::shared_ptr<ModelVersion>> ModelManager::LoadMeasured(
    const inference::ModelConfig& config, const std::string& directory, int64_t v,
    const VersionServices& services, uint64_t& footprint) {
  if (!options_.residency) return ModelVersion::Load(config, directory, v, services);
  // Versions just evicted are freed on the reaper thread: were that to
  // overlap the load, their memory going away would hide this one's. (An
  // evicted version has no request in flight, so this is short; a drained
  // unload's stragglers are waited for at most a few seconds.)
  AwaitReaperIdle(std::chrono::seconds(5));
  // The backend's library is loaded (once per process) before the first
  // sample: its start-up is nobody's footprint.
  if (options_.registry != nullptr) (void)options_.registry->Find(SpecFromConfig(config));
  const int64_t before = HeapBytesInUse();
  auto loaded = ModelVersion::Load(config, directory, v, services);
  const int64_t after = HeapBytesInUse();
  footprint = Footprint(before, after, DirectoryBytes(directory + "/" + std::to_string(v)), 0);
  return loaded;
}

std::map<std::string, uint64_t> ModelManager::ResidentFootprints() const {
  std::map<std::string, uint64_t> out;
  MutexLock lock(mu_);
  for (const auto& [name, rec] : models_) {
    if (rec.runtimes.empty()) continue;
    uint64_t& total = out[name];
    for (const auto& [v, bytes] : rec.footprints) total += bytes;
  }
  return out;
}

void ModelManager::Evict(const std::string& name, const std::string& reason) {
  MutexLock load_lock(load_mu_);
  EvictHeld(name, reason);
}

void ModelManager::EvictHeld(const std::string& name, const std::string& reason) {
  Retired retired;
  {
    MutexLock lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return;
    if (pending_.count(name) > 0) return;  // a delayed unload owns it
    for (auto& [v, runtime] : it->second.runtimes) retired.push_back(std::move(runtime));
    it->second.runtimes.clear();
    it->second.footprints.clear();
    MarkUnloaded(it->second.status);
    for (auto& [v, vs] : it->second.status.versions) vs.reason = reason;
  }
  INFERD_VLOG(1) << "model '" << EscapeControl(name) << "' " << EscapeControl(reason);
  Retire(std::move(retired));
}

void ModelManager::MakeRoom(const std::string& name, const Footprints& footprints) {
  if (!options_.make_room || footprints.empty()) return;
  uint64_t bytes = 0;
  for (const auto& [v, b] : footprints) bytes += b;
  options_.make_room(name, bytes, [this](const std::string& victim, const std::string& reason) {
    load_mu_.AssertHeld();  // called back from within this call
    EvictHeld(victim, reason);
  });
}

}  // namespace inferd
