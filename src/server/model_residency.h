// ModelResidency: serving more models than fit in memory
// (--model-memory-budget; docs/residency.md). Sits between
// InferenceServer::Infer and the ModelManager when a budget is given:
//
// - A request for a model that serves takes a lease on it (counted until
//   its final signal, through a sink decorator) and is dispatched as usual.
//   The lease is taken under the residency's lock together with the
//   version lookup, and eviction picks only models without leases under the
//   same lock: eviction never stops a version a request was handed to.
// - A request for a model the repository holds but that does not serve is
//   parked (bounded by its timeout, else kDefaultWait) and its model queued
//   for the loader thread: one load per model however many requests wait
//   (single flight). The loader first evicts least recently used, idle,
//   unpinned models until the model's estimated footprint fits the budget
//   (waiting for busy ones to finish if it must), loads it, evicts more if
//   the measured footprint turned out larger, then re-dispatches the
//   waiting requests through InferenceServer::Infer.
// - A model whose footprint alone exceeds the budget, or whose load fails,
//   answers its waiting requests UNAVAILABLE with the reason, and later
//   requests at once with the same reason, until the model's files change.
// - Pinned models (--model-pin, or the config parameter residency=pinned)
//   and explicitly loaded ones (the load API, unless evict_explicit) are
//   never evicted.
//
// Ownership: owned by InferenceServer; points at its ModelManager, which
// outlives it. Threading: every method may be called from any thread;
// Infer never blocks (the loading happens on the owned loader thread).
// Lock order: this object's mutex before the manager's; the manager's
// load/unload calls are made without this mutex held.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/infer_request.h"
#include "core/response_sink.h"
#include "core/thread_annotations.h"
#include "repository/model_manager.h"
#include "repository/residency_policy.h"

namespace inferd {

struct ResidencyOptions {
  uint64_t budget_bytes = 0;    // --model-memory-budget (> 0)
  std::set<std::string> pins;   // --model-pin
  bool evict_explicit = false;  // --model-residency-evict-explicit
  // How long a request without a timeout waits for its model to load.
  std::chrono::milliseconds default_wait{60000};
};

// What the metrics show (metrics/residency_metrics.h).
struct ResidencySnapshot {
  uint64_t budget_bytes = 0;
  uint64_t resident_bytes = 0;
  std::map<std::string, uint64_t> model_bytes;  // every serving model's footprint
  std::map<std::string, uint64_t> loads;        // on-demand and start-up loads that succeeded
  std::map<std::string, uint64_t> evictions;
  std::map<std::string, uint64_t> refusals;  // requests refused: too large, failed, timed out
  // Cold-start waits (seconds, park to re-dispatch or failure).
  std::vector<double> wait_bounds;
  std::vector<uint64_t> wait_counts;  // per bucket, +Inf last
  double wait_sum = 0;
};

class ModelResidency {
 public:
  // Serves a request on a version the caller found (validation, enqueue);
  // InferenceServer's, with the sink already counted in flight.
  using Dispatch =
      std::function<void(const std::shared_ptr<ModelVersion>&, std::unique_ptr<InferRequest>,
                         std::unique_ptr<InferResponseSink>)>;
  // Starts a request over (InferenceServer::Infer without the name check).
  using Redispatch =
      std::function<void(std::unique_ptr<InferRequest>, std::unique_ptr<InferResponseSink>)>;

  ModelResidency(ResidencyOptions options, ModelManager& manager, Dispatch dispatch,
                 Redispatch redispatch);
  ~ModelResidency();
  ModelResidency(const ModelResidency&) = delete;
  ModelResidency& operator=(const ModelResidency&) = delete;

  // Start-up: loads the pinned models and `explicit_models` (explicit
  // mode's --load-model; they count as explicitly loaded), in order, making
  // room as needed. Everything else loads on demand. The first failure.
  Status LoadStartup(const std::vector<std::string>& explicit_models);

  // See the header comment; takes ownership of both, never blocks.
  void Infer(std::unique_ptr<InferRequest> request, std::unique_ptr<InferResponseSink> sink);

  // The load API: before the manager's load, makes room for the model's
  // estimated footprint (idle models only, no waiting); after a successful
  // one, records it as explicitly loaded and evicts more if needed. A model
  // larger than the budget is unloaded again and refused (the error).
  void BeforeExplicitLoad(const std::string& name);
  Status AfterExplicitLoad(const std::string& name);
  void AfterExplicitUnload(const std::string& name);

  // Whether the repository holds the model (the manager knows it, or a
  // listing at most a second old has it): an inference on it may load it.
  bool Loadable(const std::string& name) INFERD_EXCLUDES(mu_) { return Listed(name); }

  // ModelManagerOptions::make_room: evicts idle least recently used models
  // (through `evict`, under this object's lock) so that `bytes` just loaded
  // for `name` fit the budget before they serve.
  void MakeRoomForLoaded(const std::string& name, uint64_t bytes,
                         const ModelManagerOptions::Evictor& evict) INFERD_EXCLUDES(mu_);

  // What an evicted model's last load served (metadata and config answer
  // from it): the highest version then, or `version` if it was that one.
  // None for a model never loaded, or that serves now.
  struct Kept {
    ModelSpec spec;
    std::string config_json;
    int64_t version = 0;
  };
  std::optional<Kept> KeptFromLastLoad(const std::string& name, int64_t version) const
      INFERD_EXCLUDES(mu_);

  // Answers the waiting requests UNAVAILABLE and joins the loader. Idempotent.
  void Stop();

  ResidencySnapshot Snapshot() const;

 private:
  class LeaseSink;
  struct Waiter {
    std::unique_ptr<InferRequest> request;
    std::unique_ptr<InferResponseSink> sink;
    std::chrono::steady_clock::time_point parked;
    std::chrono::steady_clock::time_point deadline;
  };
  // A model that failed to load or is too large, until its files change.
  struct Refusal {
    Status status;
    std::string fingerprint;
  };

  void Release(const std::string& name) INFERD_EXCLUDES(mu_);
  // The refusal standing for `name`, if its files did not change since.
  std::optional<Status> Refused(const std::string& name) INFERD_EXCLUDES(mu_);
  bool Listed(const std::string& name) INFERD_EXCLUDES(mu_, listing_mu_);
  void LoaderLoop() INFERD_EXCLUDES(mu_);
  // Makes `name` serve: room, load, measure, refuse if too large. `wait`:
  // whether to wait for busy models to free room (while someone waits).
  Status Bring(const std::string& name, bool wait) INFERD_EXCLUDES(mu_);
  // Evicts idle LRU models until `incoming` more bytes fit; the choice.
  EvictionChoice MakeRoom(const std::string& name, uint64_t incoming) INFERD_EXCLUDES(mu_);
  // After a load: if MakeRoomForLoaded found no room (pinned and explicit
  // models hold it), unloads `name` again; the refusal, or OK.
  Status CheckRoom(const std::string& name) INFERD_EXCLUDES(mu_);
  std::vector<ResidentModel> ResidentLocked(const std::map<std::string, uint64_t>& bytes) const
      INFERD_REQUIRES(mu_);
  void Refuse(const std::string& name, Status status) INFERD_EXCLUDES(mu_);
  // Fails (or, with OK, re-dispatches) the waiters of `name`.
  void Answer(const std::string& name, const Status& status) INFERD_EXCLUDES(mu_);
  void ExpireWaiters() INFERD_EXCLUDES(mu_);
  void ObserveWait(std::chrono::steady_clock::time_point parked) INFERD_REQUIRES(mu_);
  bool HasWaiters(const std::string& name) INFERD_EXCLUDES(mu_);

  const ResidencyOptions options_;
  ModelManager& manager_;
  const Dispatch dispatch_;
  const Redispatch redispatch_;

  mutable Mutex mu_;
  CondVar cv_;  // queue_ or waiters changed, a lease ended, stop
  bool stop_ INFERD_GUARDED_BY(mu_) = false;
  uint64_t tick_ INFERD_GUARDED_BY(mu_) = 0;
  std::map<std::string, uint64_t> last_use_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, int64_t> leases_ INFERD_GUARDED_BY(mu_);
  std::set<std::string> evicting_ INFERD_GUARDED_BY(mu_);
  // Loaded models MakeRoomForLoaded could not fit (the reason): CheckRoom.
  std::map<std::string, std::string> no_room_ INFERD_GUARDED_BY(mu_);
  std::set<std::string> config_pins_ INFERD_GUARDED_BY(mu_);
  std::set<std::string> explicit_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> known_bytes_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, Kept> kept_ INFERD_GUARDED_BY(mu_);
  // After a load: keeps what `name` serves (KeptFromLastLoad).
  void Keep(const std::string& name) INFERD_EXCLUDES(mu_);
  std::vector<uint64_t> recent_bytes_ INFERD_GUARDED_BY(mu_);  // the last kRecentLoads
  void Measured(const std::string& name, uint64_t bytes) INFERD_REQUIRES(mu_);
  std::map<std::string, Refusal> refused_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, std::vector<Waiter>> waiters_ INFERD_GUARDED_BY(mu_);
  std::deque<std::string> queue_ INFERD_GUARDED_BY(mu_);
  // Metrics.
  std::map<std::string, uint64_t> loads_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> evictions_ INFERD_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> refusals_ INFERD_GUARDED_BY(mu_);
  std::vector<uint64_t> wait_counts_ INFERD_GUARDED_BY(mu_);
  double wait_sum_ INFERD_GUARDED_BY(mu_) = 0;
  // The repository's listing, for names the manager does not know
  // (refreshed at most every second: unknown names must not list the
  // repository each).
  Mutex listing_mu_;
  std::set<std::string> listed_ INFERD_GUARDED_BY(listing_mu_);
  std::chrono::steady_clock::time_point listed_at_ INFERD_GUARDED_BY(listing_mu_);

  std::thread loader_;
};

}  // namespace inferd
