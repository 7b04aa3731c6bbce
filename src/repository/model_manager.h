// ModelManager: the model lifecycle. Knows every model of the repositories,
// the state of each version (READY, LOADING, UNAVAILABLE with a reason),
// and loads, reloads and unloads them according to the control mode.
//
// Threading: all methods are safe to call from any thread. Loads are
// serialised (one at a time); readers (Get, Index) never wait for a load:
// they take a snapshot under a short lock. Versions taken out of service
// are stopped on a background reaper thread, so in-flight requests finish
// after an unload returns.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_registry.h"
#include "repository/model_state.h"
#include "repository/model_version.h"

namespace inferd {

enum class ModelControlMode { kNone, kPoll, kExplicit };

struct ModelManagerOptions {
  std::vector<std::string> repositories;
  ModelControlMode mode = ModelControlMode::kNone;
  std::vector<std::string> startup_models;  // explicit mode; "*" = all
  const BackendRegistry* registry = nullptr;
  int gpu_count = 0;
  StatsHistogramOptions histograms;  // of every loaded version's statistics
  InferFunction ensemble_infer;      // how ensemble steps reach their models
};

struct ModelIndexEntry {
  std::string name;
  std::optional<int64_t> version;  // none: never loaded, or failed before versions were known
  ModelState state = ModelState::kUnknown;  // kUnknown: never loaded
  std::string reason;
};

class ModelManager {
 public:
  explicit ModelManager(ModelManagerOptions options);
  ~ModelManager();

  // Loads what the mode says to load at start-up. Returns the first failure
  // (every model is still attempted; failed ones stay UNAVAILABLE).
  Status LoadStartupModels();

  // Loads or reloads a model (explicit mode API). `config_json` replaces
  // config.pbtxt when given. A changed model keeps serving its old versions
  // until the new ones are ready.
  Status Load(const std::string& name, const std::optional<std::string>& config_json);

  // Takes every version of a model out of service.
  Status Unload(const std::string& name);

  // One poll pass: loads added and changed models, unloads removed ones.
  void PollOnce();

  // The version to serve: `version` < 0 means the highest READY version.
  // Errors: NOT_FOUND "Request for unknown model: ..." for unknown models,
  // versions, or no ready version; UNAVAILABLE for a known version that is
  // not ready.
  StatusOr<std::shared_ptr<ModelVersion>> Get(const std::string& name, int64_t version) const;

  // True if the manager has a record of the model (loaded, loading or
  // failed), ready or not.
  bool Knows(const std::string& name) const;

  // READY versions of a model, ascending.
  std::vector<int64_t> ReadyVersions(const std::string& name) const;

  std::vector<ModelIndexEntry> Index(bool ready_only) const;

  // Every READY version (of one model when `name` is non-empty), ordered by
  // model name then version.
  std::vector<std::shared_ptr<ModelVersion>> ReadyVersionsOf(const std::string& name) const;

  // True when every known version is READY (unloaded ones ignored).
  bool AllReady() const;

  // Failed load attempts per model name since start (metrics), for every
  // model that has failed at least once; a model forgotten by the poller
  // keeps its count.
  std::map<std::string, uint64_t> LoadFailureCounts() const;

  // Stops every version (drains accepted requests). Called at shutdown.
  void StopAll();

  ModelControlMode mode() const { return options_.mode; }

 private:
  struct VersionRecord {
    ModelState state = ModelState::kUnknown;
    std::string reason;
    std::shared_ptr<ModelVersion> runtime;  // set when READY
  };
  struct ModelRecord {
    std::map<int64_t, VersionRecord> versions;
    std::string fingerprint;
    std::string failure;  // model-level failure (config), shown without a version
  };

  Status LoadLocked(const std::string& name, const std::optional<std::string>& config_json);
  void UnloadLocked(const std::string& name, bool forget);
  void Retire(std::shared_ptr<ModelVersion> runtime);
  void ReaperLoop();

  const ModelManagerOptions options_;
  std::mutex load_mu_;  // serialises loads and unloads; taken before mu_

  mutable std::mutex mu_;
  std::map<std::string, ModelRecord> models_;      // guarded by mu_
  std::map<std::string, uint64_t> load_failures_;  // guarded by mu_

  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  std::deque<std::shared_ptr<ModelVersion>> retired_;  // guarded by reaper_mu_
  bool reaper_stop_ = false;                           // guarded by reaper_mu_
  std::thread reaper_;
};

}  // namespace inferd
