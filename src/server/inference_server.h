// InferenceServer: the facade both front ends call. Owns the model manager
// and the repository poller; answers health, metadata, configuration,
// repository control and inference in protocol-neutral terms. Repository
// and shared-memory control go through control() (control_plane.h).
//
// Every call that names a model checks the name first with
// ControlPlane::CheckModelName (INVALID_ARGUMENT for a malformed name).
//
// Threading: every method may be called from any thread. Infer() never
// blocks: it validates, enqueues and returns; the request's sink is told
// later on an instance thread (or at once, on the caller's thread, for an
// error or an inline run).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_registry.h"
#include "backend/inference_caller.h"
#include "cache/response_cache.h"
#include "core/infer_request.h"
#include "core/request_validator.h"
#include "core/response_sink.h"
#include "repository/model_manager.h"
#include "repository/repository_fetch_metrics.h"
#include "repository/repository_poller.h"
#include "scheduler/instance_layout.h"
#include "scheduler/rate_limiter.h"
#include "server/control_plane.h"
#include "server/inflight_tracker.h"
#include "server/model_residency.h"
#include "shm/cuda_shm_manager.h"
#include "shm/shm_manager.h"
#include "trace/tracer.h"

namespace inferd {

struct ServerOptions {
  std::string id = "inferd";
  std::vector<std::string> repositories;
  ModelControlMode control_mode = ModelControlMode::kNone;
  std::vector<std::string> startup_models;
  int repository_poll_secs = 15;
  // --model-unload-delay-secs (ModelManagerOptions::unload_delay).
  int model_unload_delay_secs = 0;
  // --disable-auto-complete-config (ModelManagerOptions::auto_complete_config).
  bool disable_auto_complete_config = false;
  // Follow symbolic links whose target lies outside every repository
  // (--repository-follow-external-symlinks; repository_scan.h).
  bool follow_external_symlinks = false;
  // Where models of s3:// repositories are downloaded (--model-cache-dir;
  // empty: DefaultModelCacheDirectory()), and their addressing style
  // (--s3-addressing=virtual).
  std::string model_cache_dir;
  bool s3_virtual_hosted = false;
  bool strict_readiness = true;
  bool exit_on_error = true;
  // A repository that cannot be listed at start (an s3:// store unreachable,
  // access denied, no such bucket) fails Start, unless this is set
  // (--exit-on-error=false given explicitly): then the server starts and
  // keeps trying, and the models arrive when the repository does.
  bool retry_unlisted_repositories = false;
  // GPUs for KIND_GPU instance groups: at least this many, else what the
  // device layer finds (0 on machines without CUDA).
  int gpu_count = 0;
  // Device memory (CUDA or none); null: OpenDeviceMemory().
  std::shared_ptr<DeviceMemory> device_memory;
  StatsHistogramOptions histograms;  // latency histogram buckets (metrics)
  bool allow_client_shm = false;     // clients may register shared-memory regions
  std::string backend_directory;     // backend libraries; "" = the build's (BackendRegistry)
  RequestLimits request_limits;      // model-independent bounds on every inference request
  // --cache-config local,size=N / --response-cache-byte-size: the response
  // cache's capacity in bytes; 0: no cache (docs/response_cache.md).
  uint64_t response_cache_bytes = 0;
  // --rate-limit=execution_count (false: off, rate_limiter config ignored)
  // and --rate-limit-resource capacities (docs/rate_limiter.md).
  bool rate_limit = false;
  std::vector<RateLimitResourceOverride> rate_limit_resources;
  // Model residency (server/model_residency.h, docs/residency.md):
  // --model-memory-budget in bytes (0: off, every model as today),
  // --model-pin (repeatable), --model-residency-evict-explicit.
  uint64_t model_memory_budget = 0;
  std::vector<std::string> model_pins;
  bool model_residency_evict_explicit = false;
  // Tracing (--trace-config; docs/tracing.md): decides which requests are
  // traced and where their traces go. Null: tracing stays off (a Tracer
  // with the default settings).
  std::shared_ptr<trace::Tracer> tracer;
};

struct TensorMetadata {
  std::string name;
  DataType datatype;
  Shape shape;  // -1 for variable dims, leading -1 for the batch dimension
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

struct ModelStatistics {
  std::string name;
  int64_t version = 0;
  ModelStatsSnapshot stats;
  double load_seconds = 0;  // how long the version took to load
  int instance_count = 0;   // instances across its instance groups
  // The automatic instance layout in force; none when the config fixes
  // the instances (docs/instance_layout.md).
  std::optional<LayoutState> layout{};
};

class InferenceServer {
 public:
  InferenceServer(ServerOptions options, std::unique_ptr<BackendRegistry> registry);
  ~InferenceServer();

  // Loads the start-up models and starts polling (poll mode). With
  // exit_on_error, a model that fails to load fails Start. A repository
  // that cannot be listed fails Start with the reason (naming it), unless
  // retry_unlisted_repositories: then Start succeeds, the poll passes (poll
  // mode) or a retry thread with a capped backoff (none and explicit
  // modes) load the start-up models once the listing succeeds.
  Status Start();

  // Readiness turns false at once and stays false; requests still run.
  void BeginShutdown();
  // Pending delayed unloads (--model-unload-delay-secs) are done now rather
  // than when their delay ends, so that shutdown does not wait for them;
  // their unload calls are answered. Stop does it too.
  void EndUnloadDelays() { manager_->EndUnloadDelays(); }
  // Waits until no request is in flight or `timeout_ms` passes; true if idle.
  bool WaitForIdle(int timeout_ms);
  // Stops the control plane's worker (the running load finishes, queued
  // ones are answered UNAVAILABLE), polling and every model (drains
  // accepted requests).
  void Stop();

  bool IsLive() const { return true; }
  bool IsReady() const;
  bool IsShuttingDown() const { return shutting_down_.load(); }
  const std::string& id() const { return options_.id; }
  ModelControlMode control_mode() const { return options_.control_mode; }
  static const char* Version();
  std::vector<std::string> Extensions() const;

  // OK if the model version exists and is ready; otherwise the error an
  // inference on it would get.
  Status CheckModel(const std::string& name, int64_t version) const;

  // Whether the version an inference on (name, version) would run on is a
  // decoupled model; false when there is none (the inference fails anyway).
  bool IsDecoupled(const std::string& name, int64_t version) const;

  // Model-level queries; `version` < 0 means the latest ready version. An
  // UNLOADING model (--model-unload-delay-secs) serves but is not ready.
  StatusOr<bool> ModelReady(const std::string& name, int64_t version) const;
  StatusOr<ModelMetadata> GetModelMetadata(const std::string& name, int64_t version) const;
  StatusOr<std::string> GetModelConfigJson(const std::string& name, int64_t version) const;
  StatusOr<ModelSpec> GetModelSpec(const std::string& name, int64_t version) const;

  // Statistics extension: every ready version of every model (name empty),
  // of one model (version < 0), or one version. A named model or version
  // that is not ready is INVALID_ARGUMENT, as in Triton.
  StatusOr<std::vector<ModelStatistics>> GetStatistics(const std::string& name,
                                                       int64_t version) const;

  // Failed load attempts per model name since start (metrics).
  std::map<std::string, uint64_t> ModelLoadFailures() const {
    return manager_->LoadFailureCounts();
  }

  // What remote repositories fetched, per repository (metrics).
  std::map<std::string, RepositoryFetchCounts> RepositoryFetches() const {
    return fetch_metrics_->Snapshot();
  }

  // Repository extension.
  // With `redact_paths` (for clients), the repository and backend
  // directories in `reason` read "<server path>"; the log keeps them.
  std::vector<ModelIndexEntry> RepositoryIndex(bool ready_only, bool redact_paths = true) const;
  // Front ends call control().Load / Unload, which run these on the control
  // plane's worker. LoadModel is synchronous (loading may take long).
  // `files`: the load call's model files (ModelManager::Load). UnloadModel
  // calls `done` when the model is unloaded: before it returns, or after
  // the unload delay on the manager's delayer thread (ModelManager::Unload).
  Status LoadModel(const std::string& name, const std::optional<std::string>& config_json,
                   const ModelFiles& files = {});
  void UnloadModel(const std::string& name, std::function<void(Status)> done);

  // The control calls of every front end (load/unload, client shared memory).
  ControlPlane& control() { return control_; }

  // Validates the request and hands it with `sink` to the model's
  // scheduler; never blocks. Takes ownership of both. The sink gets the
  // request's responses and exactly one final signal (core/response_sink.h):
  // at once, on this thread, for an unknown model or an invalid request;
  // later, on an instance thread (or on this thread for an inline run),
  // otherwise. Accepted requests count as in flight until their final
  // signal (WaitForIdle).
  void Infer(std::unique_ptr<InferRequest> request, std::unique_ptr<InferResponseSink> sink);

  int64_t InflightCount() const { return inflight_.count(); }

  // The residency's figures (metrics); none without --model-memory-budget.
  std::optional<ResidencySnapshot> Residency() const {
    if (!residency_) return std::nullopt;
    return residency_->Snapshot();
  }

  // Client shared-memory regions (shared by every front end; the codecs
  // resolve requests' regions here). Clients register and unregister them
  // through control(), allowed only with allow_client_shm().
  SharedMemoryManager& shared_memory() { return shared_memory_; }
  bool allow_client_shm() const { return options_.allow_client_shm; }
  // CUDA shared-memory regions (register fails without a GPU).
  CudaSharedMemoryManager& cuda_shared_memory() { return *cuda_shared_memory_; }
  // The device layer, and the GPUs model configurations may name.
  const DeviceMemory& device_memory() const { return *device_; }
  int gpu_count() const { return gpu_count_; }
  const RequestLimits& request_limits() const { return options_.request_limits; }
  // Tracing's settings and sampling (front ends sample; the trace API
  // reads and changes the settings). Never null.
  trace::Tracer& tracer() const { return *tracer_; }
  // The response cache (--cache-config); null without one.
  const ResponseCache* response_cache() const { return response_cache_.get(); }

 private:
  // One poll-mode pass (the poller's thread): warns about each repository
  // that cannot be read now, then ModelManager::PollOnce.
  void Poll();
  // The retry thread of Start (none and explicit modes): until the
  // repositories list, waits 1, 2, 4 ... up to 30 s between attempts; then
  // loads the start-up models once and ends.
  void RetryStartup();

  // Infer on a version found (decoupled refusal, validation, enqueue);
  // `sink` is already counted in flight.
  void Serve(const std::shared_ptr<ModelVersion>& version, std::unique_ptr<InferRequest> request,
             std::unique_ptr<InferResponseSink> sink);

  // The repositories and the backend directory, as given and resolved:
  // what RedactPaths hides from clients.
  std::vector<std::string> ServerPaths() const;

  const ServerOptions options_;
  const std::shared_ptr<trace::Tracer> tracer_;
  std::unique_ptr<BackendRegistry> registry_;
  // Shared with the remote repository sources, which count into it.
  std::shared_ptr<RepositoryFetchMetrics> fetch_metrics_ =
      std::make_shared<RepositoryFetchMetrics>();
  std::shared_ptr<DeviceMemory> device_;
  int gpu_count_ = 0;
  // Shared with every caching version (version_cache.h); null: no cache.
  std::shared_ptr<ResponseCache> response_cache_;
  // Requests accepted and not yet answered; declared before the models, whose
  // requests hold its decorators: destroyed after them.
  InflightTracker inflight_;
  // Declared before the system manager, which points at it (set_cuda), and
  // before the models, whose requests may hold its regions: destroyed after.
  std::unique_ptr<CudaSharedMemoryManager> cuda_shared_memory_;
  std::unique_ptr<ModelManager> manager_;
  // With --model-memory-budget; after the manager it drives, stopped first.
  std::unique_ptr<ModelResidency> residency_;
  SharedMemoryManager shared_memory_;
  std::atomic<bool> shutting_down_{false};

  std::unique_ptr<RepositoryPoller> poller_;  // poll mode, from Start to Stop

  // Start's retry thread (RetryStartup), stopped by Stop.
  Mutex retry_mu_;
  CondVar retry_cv_;
  bool retry_stop_ INFERD_GUARDED_BY(retry_mu_) = false;
  std::thread retry_;

  // Backends' calls into this server (InferdHostApi infer_*): set as the
  // process's InferenceCaller at construction, cleared at destruction.
  class Caller final : public InferenceCaller {
   public:
    explicit Caller(InferenceServer& server) : server_(server) {}
    void Submit(std::unique_ptr<InferRequest> request,
                std::unique_ptr<InferResponseSink> sink) override {
      server_.Infer(std::move(request), std::move(sink));
    }

   private:
    InferenceServer& server_;
  };
  Caller caller_{*this};

  // Last: built after everything it drives, stopped first (Stop), destroyed first.
  ControlPlane control_{*this};
};

}  // namespace inferd
