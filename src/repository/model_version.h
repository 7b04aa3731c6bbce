// ModelVersion: one loaded version of a model, ready to take requests: its
// spec, its backend model, its instances and its scheduler.
//
// Ownership: held by shared_ptr; the manager holds one while the version is
// READY, and readers take copies (snapshots) so an unload never frees a
// version under a request that is being enqueued. Stop() drains accepted
// requests and joins the instance threads; it must be called before the last
// reference goes away (the manager's reaper does this).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/backend_registry.h"
#include "cache/version_cache.h"
#include "core/model_spec.h"
#include "repository/version_services.h"
#include "scheduler/clock.h"
#include "scheduler/ensemble_scheduler.h"
#include "scheduler/instance_layout.h"
#include "scheduler/model_stats.h"
#include "scheduler/scheduler.h"

namespace inference {
class ModelConfig;
}

namespace inferd {

class ModelVersion {
 public:
  // Loads version `version` of the model in `model_dir` from a normalised
  // config: finds the backend, loads the model, creates every instance of
  // its instance groups and starts the scheduler, with the server's
  // `services` (clock, statistics' histograms, cache, rate limiter...).
  static StatusOr<std::shared_ptr<ModelVersion>> Load(const inference::ModelConfig& config,
                                                      const std::string& model_dir, int64_t version,
                                                      const VersionServices& services);
  ~ModelVersion();

  const ModelSpec& spec() const { return spec_; }
  int64_t version() const { return version_; }
  const std::string& config_json() const { return config_json_; }
  // The config's accepted-but-ineffective fields (config_support.h), one
  // sentence each joined by "; "; "" when none. Shown as the READY entry's
  // reason in the repository index.
  const std::string& config_warnings() const { return config_warnings_; }
  const ModelStats& stats() const { return stats_; }
  ModelStats& stats() { return stats_; }
  // How long Load took, seconds (metrics: nv_model_load_duration_secs).
  double load_seconds() const { return load_seconds_; }
  // The automatic instance layout in force (docs/instance_layout.md); none
  // when the config fixes the instances. Thread-safe.
  std::optional<LayoutState> layout() const;

  // Hands a validated request and its sink to the scheduler, which owns
  // both from here (never blocks). The sink gets exactly one final signal,
  // possibly before this returns (a rejection, an inline run).
  void Enqueue(std::unique_ptr<InferRequest> request, std::unique_ptr<InferResponseSink> sink);

  // The backend's report that this version can no longer serve
  // (InferdHostApi's model_set_unavailable); "" while healthy. The
  // manager shows such a version UNAVAILABLE with the reason and refuses
  // its new requests; loading the model again replaces it. Thread-safe.
  std::string unavailable_reason() const { return health_->reason(); }
  bool failed() const { return health_->failed(); }

  // Finishes accepted requests and stops the instance threads. Idempotent.
  void Stop();

 private:
  ModelVersion() = default;

  ModelSpec spec_;
  int64_t version_ = 0;
  std::string config_json_;
  std::string config_warnings_;
  ModelStats stats_;
  double load_seconds_ = 0;
  std::shared_ptr<ModelHealth> health_ = std::make_shared<ModelHealth>();
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<BackendModel> backend_model_;
  // The response cache's use by this version; null unless the server has a
  // cache and the config enables it.
  std::unique_ptr<VersionCache> cache_;
  std::shared_ptr<InstanceLayout> layout_;  // null without an automatic layout
  std::unique_ptr<Scheduler> scheduler_;    // owns the instances; destroyed first
};

}  // namespace inferd
