// ModelManager: the model lifecycle. Knows every model of the repository
// source, the state of each version (READY, LOADING, UNAVAILABLE with a
// reason), and loads, reloads and unloads them according to the control
// mode. Each operation observes the source (listing, fingerprints), plans
// with the pure functions of lifecycle_plan.h, and applies the plan: reads
// the config, loads versions (ModelVersion::Load), swaps them in, retires
// the old ones.
//
// Threading: all methods are safe to call from any thread. Loads, unloads
// and poll passes are serialised (the load lock, taken before the state
// lock); readers (Get, Index, ...) never wait for a load: they take a
// snapshot under the short state lock. Versions taken out of service are
// stopped on a background reaper thread, so in-flight requests finish after
// an unload returns. The poll thread is RepositoryPoller's. With an unload
// delay, a delayer thread unloads UNLOADING models when their delay is over
// (model_unload_delay.cc).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_registry.h"
#include "core/thread_annotations.h"
#include "repository/lifecycle_plan.h"
#include "repository/model_files.h"
#include "repository/model_state.h"
#include "repository/model_version.h"
#include "repository/repository_source.h"
#include "repository/version_services.h"
#include "scheduler/clock.h"

namespace inferd {

enum class ModelControlMode { kNone, kPoll, kExplicit };

struct ModelManagerOptions {
  // Where models come from (required); shared with whoever redacts its paths.
  std::shared_ptr<RepositorySource> source;
  // The time source of every loaded version's scheduler (required; not
  // owned; outlives the manager).
  Clock* clock = nullptr;
  ModelControlMode mode = ModelControlMode::kNone;
  std::vector<std::string> startup_models;  // explicit mode; "*" = all
  const BackendRegistry* registry = nullptr;
  int gpu_count = 0;
  StatsHistogramOptions histograms;  // of every loaded version's statistics
  InferFunction ensemble_infer;      // how ensemble steps reach their models
  // --model-unload-delay-secs: an unload, or a poll pass's removal, of a
  // model that serves first makes it UNLOADING (not ready, still serving)
  // for this long, on `clock`; 0: at once.
  std::chrono::microseconds unload_delay{0};
  // Python models' auto_complete_config (python_auto_complete.h); false:
  // --disable-auto-complete-config.
  bool auto_complete_config = true;
  // Server-wide services handed to every version (version_services.h);
  // null when off.
  std::shared_ptr<ResponseCache> response_cache;
  std::shared_ptr<RateLimiter> rate_limiter;
  // --model-memory-budget (server/model_residency.h): each version's
  // footprint is measured at load (model_footprint.h), and poll passes
  // load no model that does not serve now (added and evicted models stay
  // cold until a request loads them); changed serving ones still reload.
  bool residency = false;
  // With residency: called with the load lock held once a model's versions
  // have loaded and before they serve, with the bytes they measured, so
  // that what serves never exceeds the budget. `evict` unloads a model at
  // once (the same as Evict); the callee calls it for the idle models it
  // picks, under its own lock, so that no request leases them meanwhile.
  using Evictor = std::function<void(const std::string& name, const std::string& reason)>;
  std::function<void(const std::string& name, uint64_t bytes, const Evictor& evict)> make_room;
};

struct ModelIndexEntry {
  std::string name;
  std::optional<int64_t> version;  // none: never loaded, or failed before versions were known
  ModelState state = ModelState::kUnknown;  // kUnknown: never loaded
  std::string reason;
  // --model-memory-budget: the version's measured footprint, bytes (0:
  // not measured, or not serving).
  uint64_t memory_bytes = 0;
  // The automatic instance layout of a serving version
  // (docs/instance_layout.md); none when its config fixes the instances.
  std::optional<LayoutState> layout{};
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
  //
  // Non-empty `files` (checked with CheckModelFiles; `config_json` is then
  // required) are the model's files: they are written to a private
  // directory and the model is loaded from there, whether or not the
  // repository holds it. The directory lives as long as a version loaded
  // from it (unload, a later load that replaces them, shutdown: it is
  // removed once those versions have stopped). A later load without files
  // reads the repository again.
  //
  // Errors, worded as Triton's: INTERNAL "failed to load '<m>', failed to
  // poll from model repository: <why>" when the model could not be read
  // (not in the repository, a listing problem, a config that cannot be read
  // or parsed, files that cannot be written); INVALID_ARGUMENT "load failed
  // for model '<m>': <why>" when it was read but did not load (an invalid
  // config, no version to load, a backend's failure); INVALID_ARGUMENT
  // "invalid model name ..." for a name no model can have.
  Status Load(const std::string& name, const std::optional<std::string>& config_json,
              const ModelFiles& files = {});

  // Takes every version of a model out of service; `done` is called once the
  // model is unloaded (its in-flight requests finish afterwards, on the
  // reaper). With an unload delay and a model that serves, the versions are
  // UNLOADING at once (not ready; requests still served) and `done` is
  // called when the delay is over and the unload is done, on the delayer
  // thread: OK, or ABORTED when a load of the model cancelled the unload
  // meanwhile. A second unload of an UNLOADING model waits for the pending
  // one. Otherwise `done` is called before this returns. `done` must not
  // block.
  using UnloadDone = std::function<void(Status)>;
  void Unload(const std::string& name, UnloadDone done) INFERD_EXCLUDES(load_mu_, mu_);
  // The same, returning when `done` would be called.
  Status Unload(const std::string& name);

  // Shutdown: pending delayed unloads are due now (and later ones at once);
  // returns without waiting for them. Idempotent.
  void EndUnloadDelays() INFERD_EXCLUDES(mu_);
  // Waits until no delayed unload is pending (after EndUnloadDelays: until
  // they are done), so that StopAll does not race the unloads.
  void AwaitUnloads() INFERD_EXCLUDES(mu_);

  // One poll pass: loads added and changed models, unloads removed ones.
  // When the source cannot be listed, changes nothing (every loaded model
  // keeps serving) and returns the listing's error; OK otherwise (load
  // failures are the models' states).
  Status PollOnce();

  // The version to serve: `version` < 0 means the highest READY version, or
  // without one the highest UNLOADING one (UNLOADING versions still serve).
  // Errors: NOT_FOUND "Request for unknown model: ..." for unknown models,
  // versions, or no serving version; UNAVAILABLE for a known version that
  // does not serve.
  StatusOr<std::shared_ptr<ModelVersion>> Get(const std::string& name, int64_t version) const;

  // True if the manager has a record of the model (loaded, loading or
  // failed), ready or not.
  bool Knows(const std::string& name) const;

  // Whether the version (`version` < 0: some version) is READY; an
  // UNLOADING version serves but is not ready.
  bool IsReady(const std::string& name, int64_t version) const;

  // The versions of a model that serve (READY or UNLOADING), ascending.
  std::vector<int64_t> ServingVersions(const std::string& name) const;

  std::vector<ModelIndexEntry> Index(bool ready_only) const;

  // Every serving version (READY or UNLOADING; of one model when `name` is
  // non-empty), ordered by model name then version.
  std::vector<std::shared_ptr<ModelVersion>> ServingVersionsOf(const std::string& name) const;

  // True when every known version is READY (unloaded and UNLOADING ones
  // ignored: they leave on purpose).
  bool AllReady() const;

  // Failed load attempts per model name since start (metrics), for every
  // model that has failed at least once; a model forgotten by the poller
  // keeps its count.
  std::map<std::string, uint64_t> LoadFailureCounts() const;

  // ---- residency (ModelManagerOptions::residency) ----
  // The footprint of every model that serves, bytes: the sum over its
  // serving versions of what each measured at load.
  std::map<std::string, uint64_t> ResidentFootprints() const INFERD_EXCLUDES(mu_);
  // Unloads the model at once (no unload delay) and marks its versions
  // UNAVAILABLE with `reason` (e.g. "evicted: ..."). Its in-flight requests
  // finish on the reaper; the caller makes sure there are none.
  void Evict(const std::string& name, const std::string& reason) INFERD_EXCLUDES(load_mu_, mu_);

  // Stops every version (drains accepted requests). Called at shutdown.
  void StopAll();

  ModelControlMode mode() const { return options_.mode; }
  const RepositorySource& source() const { return *options_.source; }

 private:
  struct ModelRecord {
    LoadedModel status;                                         // what planning sees
    std::map<int64_t, std::shared_ptr<ModelVersion>> runtimes;  // the READY versions
    std::map<int64_t, uint64_t> footprints;                     // residency: bytes per runtime
  };
  // What readers and planning see: a version whose backend marked it
  // unavailable at run time (ModelVersion::failed) is UNAVAILABLE with the
  // backend's reason, until a load replaces it.
  static LoadedModel Observed(const ModelRecord& rec);
  using Retired = std::vector<std::shared_ptr<ModelVersion>>;
  // A delayed unload: due at `deadline`; kUnload or kForget; who waits.
  struct PendingUnload {
    Clock::TimePoint deadline;
    ModelAction action = ModelAction::kUnload;
    std::vector<UnloadDone> waiters;
  };
  using LoadResults = std::map<int64_t, StatusOr<std::shared_ptr<ModelVersion>>>;
  using Footprints = std::map<int64_t, uint64_t>;

  // Where a load reads models from: the repository, or a load call's files.
  struct LoadInput {
    RepositorySource& source;
    const std::optional<std::string>& config_json;
    std::shared_ptr<const ModelFileDirectory> files;  // null: the repository
  };

  Status LoadFiles(const std::string& name, const std::optional<std::string>& config_json,
                   const ModelFiles& files) INFERD_EXCLUDES(load_mu_);
  // What the source holds for `request` (fingerprints of the models it
  // concerns); an unload, or a load of an invalid name, looks at nothing.
  StatusOr<SourceModels> Observe(const LifecycleRequest& request) INFERD_REQUIRES(load_mu_);
  // Plans `request` on a fresh snapshot and applies it; the first failure.
  Status Execute(const LifecycleRequest& request, const SourceModels& source,
                 const LoadInput& input) INFERD_REQUIRES(load_mu_);
  LoadedModels Snapshot() const INFERD_EXCLUDES(mu_);
  Status Apply(const ModelPlan& plan, const SourceModels& source, const LoadInput& input)
      INFERD_REQUIRES(load_mu_);
  // Records the failure; a non-empty `fingerprint` is what failed, so that
  // poll passes leave the model alone until it changes.
  Status ApplyFailure(const ModelPlan& plan, const std::string& fingerprint = "")
      INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  void ApplyUnload(const ModelPlan& plan) INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  Status ApplyLoad(const std::string& name, const std::string& fingerprint, const LoadInput& input)
      INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  // Materializes and loads plan.load; `retry` says the source could not
  // provide the files for a reason that may pass (the fingerprint is then
  // not recorded, so the next poll tries again).
  LoadResults LoadVersions(const ModelPlan& plan, const inference::ModelConfig& config,
                           const LoadInput& input, bool& retry, Footprints& footprints)
      INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  // One version's load, measured when options_.residency (`footprint`).
  StatusOr<std::shared_ptr<ModelVersion>> LoadMeasured(const inference::ModelConfig& config,
                                                       const std::string& directory, int64_t v,
                                                       const VersionServices& services,
                                                       uint64_t& footprint)
      INFERD_EXCLUDES(reaper_mu_);
  // Waits (at most `limit`) until the reaper has freed every version it was
  // given: a measured load must not count their memory going away.
  void AwaitReaperIdle(std::chrono::milliseconds limit) INFERD_EXCLUDES(reaper_mu_);
  Status Commit(const ModelPlan& plan, const std::string& fingerprint, LoadResults results,
                const Footprints& footprints) INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  // A plan's `delay`: the model goes UNLOADING, its unload due later.
  void ApplyUnloadLater(const ModelPlan& plan) INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  // A plan's `cancel_unload`: READY again; the waiters hear ABORTED.
  void CancelUnload(const std::string& name) INFERD_REQUIRES(load_mu_) INFERD_EXCLUDES(mu_);
  // The delayer thread, and the unload it does when one is due.
  void DelayLoop() INFERD_EXCLUDES(load_mu_, mu_);
  void UnloadDue(const std::string& name) INFERD_EXCLUDES(load_mu_, mu_);
  // Before a commit: options_.make_room for the bytes just loaded.
  void MakeRoom(const std::string& name, const Footprints& footprints) INFERD_REQUIRES(load_mu_)
      INFERD_EXCLUDES(mu_);
  void EvictHeld(const std::string& name, const std::string& reason) INFERD_REQUIRES(load_mu_)
      INFERD_EXCLUDES(mu_);
  void Retire(Retired runtimes) INFERD_EXCLUDES(reaper_mu_);
  void ReaperLoop() INFERD_EXCLUDES(reaper_mu_);

  const ModelManagerOptions options_;
  Mutex load_mu_ INFERD_ACQUIRED_BEFORE(mu_);  // serialises loads, unloads and polls

  mutable Mutex mu_;
  std::map<std::string, ModelRecord> models_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> load_failures_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, PendingUnload> pending_ INFERD_GUARDED_BY(mu_);
  bool hurry_ INFERD_GUARDED_BY(mu_) = false;         // EndUnloadDelays: all due now
  bool delayer_stop_ INFERD_GUARDED_BY(mu_) = false;  // the destructor
  CondVar delayer_cv_;                                // with mu_: pending_ changed
  std::thread delayer_;                               // with an unload delay

  Mutex reaper_mu_;
  CondVar reaper_cv_;
  std::deque<std::shared_ptr<ModelVersion>> retired_ INFERD_GUARDED_BY(reaper_mu_);
  bool reaper_stop_ INFERD_GUARDED_BY(reaper_mu_) = false;
  bool reaper_busy_ INFERD_GUARDED_BY(reaper_mu_) = false;  // stopping and freeing one
  CondVar reaper_idle_cv_;                                  // with reaper_mu_
  std::thread reaper_;
};

}  // namespace inferd
