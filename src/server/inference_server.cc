#include "server/inference_server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/log.h"
#include "core/request_validator.h"
#include "core/sanitize.h"
#include "objectstore/s3_location.h"
#include "repository/repository_scan.h"
#include "repository/repository_source_factory.h"
#include "trace/tracing_sink.h"

namespace inferd {

InferenceServer::InferenceServer(ServerOptions options, std::unique_ptr<BackendRegistry> registry)
    : options_(std::move(options)),
      tracer_(options_.tracer ? options_.tracer
                              : std::make_shared<trace::Tracer>(trace::TraceConfig{}, nullptr)),
      registry_(std::move(registry)),
      device_(options_.device_memory ? options_.device_memory : OpenDeviceMemory()),
      gpu_count_(std::max(options_.gpu_count, device_->DeviceCount())),
      cuda_shared_memory_(std::make_unique<CudaSharedMemoryManager>(device_)) {
  ModelManagerOptions mo;
  RepositorySourceOptions ro;
  ro.follow_external_symlinks = options_.follow_external_symlinks;
  ro.model_cache_dir = options_.model_cache_dir;
  ro.s3_virtual_hosted = options_.s3_virtual_hosted;
  ro.metrics = fetch_metrics_;
  mo.source = MakeRepositorySource(options_.repositories, ro);
  mo.clock = RealClock::Get();
  mo.mode = options_.control_mode;
  mo.unload_delay = std::chrono::seconds(options_.model_unload_delay_secs);
  mo.auto_complete_config = !options_.disable_auto_complete_config;
  mo.startup_models = options_.startup_models;
  shared_memory_.set_cuda(cuda_shared_memory_.get());
  mo.registry = registry_.get();
  mo.gpu_count = gpu_count_;
  mo.ensemble_infer = [this](std::unique_ptr<InferRequest> r,
                             std::unique_ptr<InferResponseSink> sink) {
    Infer(std::move(r), std::move(sink));
  };
  mo.histograms = options_.histograms;
  if (options_.response_cache_bytes > 0) {
    response_cache_ = std::make_shared<ResponseCache>(options_.response_cache_bytes);
    mo.response_cache = response_cache_;
  }
  if (options_.rate_limit) {
    mo.rate_limiter = std::make_shared<RateLimiter>(options_.rate_limit_resources);
  }
  mo.residency = options_.model_memory_budget > 0;
  mo.make_room = [this](const std::string& name, uint64_t bytes,
                        const ModelManagerOptions::Evictor& evict) {
    if (residency_) residency_->MakeRoomForLoaded(name, bytes, evict);
  };
  manager_ = std::make_unique<ModelManager>(std::move(mo));
  if (options_.model_memory_budget > 0) {
    ResidencyOptions ro_res;
    ro_res.budget_bytes = options_.model_memory_budget;
    ro_res.pins.insert(options_.model_pins.begin(), options_.model_pins.end());
    ro_res.evict_explicit = options_.model_residency_evict_explicit;
    residency_ = std::make_unique<ModelResidency>(
        std::move(ro_res), *manager_,
        [this](const std::shared_ptr<ModelVersion>& mv, std::unique_ptr<InferRequest> r,
               std::unique_ptr<InferResponseSink> sink) {
          Serve(mv, std::move(r), std::move(sink));
        },
        [this](std::unique_ptr<InferRequest> r, std::unique_ptr<InferResponseSink> sink) {
          residency_->Infer(std::move(r), std::move(sink));
        });
  }
  SetInferenceCaller(&caller_);
}

InferenceServer::~InferenceServer() {
  Stop();
  ClearInferenceCaller(&caller_);
}

const char* InferenceServer::Version() { return "0.1.0"; }

std::vector<std::string> InferenceServer::Extensions() const {
  return {"sequence",
          "model_repository",
          "schedule_policy",
          "model_configuration",
          "system_shared_memory",
          "cuda_shared_memory",
          "binary_tensor_data",
          "parameters",
          "statistics",
          "classification",
          "trace",
          "logging"};
}

Status InferenceServer::Start() {
  const bool poll =
      options_.control_mode == ModelControlMode::kPoll && options_.repository_poll_secs > 0;
  // Whether the repositories can be listed at all is asked first: a store
  // that is unreachable, refuses access or lacks the bucket is a
  // deployment's error, not a model's (its message names the repository).
  if (auto listed = manager_->source().ListModels(); !listed.ok()) {
    if (!options_.retry_unlisted_repositories) return listed.status();
    INFERD_LOG(Warning) << EscapeControl(listed.status().message())
                        << "; starting without models (--exit-on-error=false), "
                        << (poll ? "each poll retries" : "retrying in the background");
    // Poll mode's passes load everything once the listing works; explicit
    // mode without --load-model has nothing to load at start.
    const bool startup_loads =
        options_.control_mode != ModelControlMode::kExplicit || !options_.startup_models.empty();
    if (!poll && startup_loads) retry_ = std::thread([this] { RetryStartup(); });
  } else {
    // With a budget, only pinned (and explicit mode's --load-model) models
    // load at start; the others when a request asks for them.
    Status s = residency_
                   ? residency_->LoadStartup(options_.control_mode == ModelControlMode::kExplicit
                                                 ? options_.startup_models
                                                 : std::vector<std::string>{})
                   : manager_->LoadStartupModels();
    if (!s.ok() && options_.exit_on_error) return s;
  }
  if (poll) {
    poller_ = std::make_unique<RepositoryPoller>(
        RealClock::Get(), std::chrono::seconds(options_.repository_poll_secs), [this] { Poll(); });
  }
  return Status::Ok();
}

void InferenceServer::RetryStartup() {
  auto delay = std::chrono::seconds(1);
  constexpr auto kMaxDelay = std::chrono::seconds(30);
  MutexLock lock(retry_mu_);
  while (!retry_stop_) {
    retry_cv_.WaitUntil(lock, std::chrono::steady_clock::now() + delay);
    if (retry_stop_) return;
    lock.Unlock();
    auto listed = manager_->source().ListModels();
    if (listed.ok()) {
      INFERD_LOG(Info) << "the model repositories can be listed now; loading the start-up models";
      (void)manager_->LoadStartupModels();  // failures are the models' states
      return;
    }
    delay = std::min(delay * 2, std::chrono::seconds(kMaxDelay));
    INFERD_LOG(Warning) << EscapeControl(listed.status().message()) << "; retrying in "
                        << delay.count() << " s";
    lock.Lock();
  }
}

void InferenceServer::Poll() {
  // A repository that is missing or unreachable now may be a remount or a
  // network blip: the pass is skipped (ModelManager::PollOnce keeps every
  // loaded model when the repositories cannot be listed), the operator is
  // told once per poll until it is back, and the next pass retries.
  bool warned = false;
  for (const auto& repository : options_.repositories) {
    if (s3::IsS3Url(repository)) continue;  // its listing failure says why
    if (Status s = CheckRepositoryPath(repository); !s.ok()) {
      INFERD_LOG(Warning) << "poll: " << EscapeControl(s.message())
                          << "; loaded models keep serving";
      warned = true;
    }
  }
  Status listed = manager_->PollOnce();
  if (!listed.ok() && !warned) {
    INFERD_LOG(Warning) << "poll: " << EscapeControl(listed.message())
                        << "; loaded models keep serving; next attempt in "
                        << options_.repository_poll_secs << " s";
  }
}

void InferenceServer::BeginShutdown() { shutting_down_ = true; }

bool InferenceServer::WaitForIdle(int timeout_ms) { return inflight_.WaitForIdle(timeout_ms); }

void InferenceServer::Stop() {
  {
    MutexLock lock(retry_mu_);
    retry_stop_ = true;
  }
  retry_cv_.NotifyAll();
  if (retry_.joinable()) retry_.join();
  if (residency_) residency_->Stop();         // waiting requests answered; no more on-demand loads
  if (manager_) manager_->EndUnloadDelays();  // the unload calls waiting are answered soon
  control_.Stop();                            // no load runs while the models stop
  if (poller_) poller_->Stop();
  if (manager_) {
    // Delayed unloads end before the models stop: a version is stopped once
    // (by the reaper after its unload, or here), never by both at a time.
    manager_->AwaitUnloads();
    manager_->StopAll();
  }
}

bool InferenceServer::IsReady() const {
  if (shutting_down_) return false;
  return !options_.strict_readiness || manager_->AllReady();
}

Status InferenceServer::CheckModel(const std::string& name, int64_t version) const {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  Status s = manager_->Get(name, version).status();
  // With a budget, a model of the repository that does not serve now is
  // loaded by its inference (ModelResidency::Infer answers the rest).
  if (s.ok() || !residency_) return s;
  if (!manager_->ServingVersions(name).empty()) return manager_->Get(name, version).status();
  return residency_->Loadable(name) ? Status::Ok() : s;
}

bool InferenceServer::IsDecoupled(const std::string& name, int64_t version) const {
  auto mv = manager_->Get(name, version);
  return mv.ok() && (*mv)->spec().decoupled;
}

StatusOr<bool> InferenceServer::ModelReady(const std::string& name, int64_t version) const {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  auto mv = manager_->Get(name, version);
  if (mv.ok()) return manager_->IsReady(name, version);  // UNLOADING: serving, not ready
  if (mv.status().code() == StatusCode::kUnavailable) return false;
  // A model that is known but has no ready version (failed or unloaded) is
  // "not ready", not "unknown", unless a specific unknown version was asked.
  if (version < 0 && manager_->Knows(name)) return false;
  return mv.status();
}

StatusOr<ModelMetadata> InferenceServer::GetModelMetadata(const std::string& name,
                                                          int64_t version) const {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  auto mv = manager_->Get(name, version);
  // With a budget, an evicted model answers from its last load (clients
  // ask for metadata before they infer, and the inference loads it).
  std::optional<ModelResidency::Kept> kept;
  if (!mv.ok() && residency_) kept = residency_->KeptFromLastLoad(name, version);
  if (!mv.ok() && !kept) return mv.status();
  const ModelSpec& spec = kept ? kept->spec : (*mv)->spec();
  ModelMetadata md;
  md.name = spec.name;
  if (version >= 0) {
    md.versions.push_back(std::to_string(version));
  } else if (kept) {
    md.versions.push_back(std::to_string(kept->version));
  } else {
    for (int64_t v : manager_->ServingVersions(name)) md.versions.push_back(std::to_string(v));
  }
  md.platform = spec.platform.empty() ? spec.backend : spec.platform;
  auto convert = [&](const std::vector<TensorSpec>& in, std::vector<TensorMetadata>& out) {
    for (const auto& t : in) {
      TensorMetadata tm{t.name, t.datatype, t.dims};
      if (spec.max_batch_size > 0) tm.shape.insert(tm.shape.begin(), -1);
      out.push_back(std::move(tm));
    }
  };
  convert(spec.inputs, md.inputs);
  convert(spec.outputs, md.outputs);
  return md;
}

StatusOr<std::string> InferenceServer::GetModelConfigJson(const std::string& name,
                                                          int64_t version) const {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  auto mv = manager_->Get(name, version);
  if (!mv.ok() && residency_) {
    if (auto kept = residency_->KeptFromLastLoad(name, version)) return kept->config_json;
  }
  if (!mv.ok()) return mv.status();
  return (*mv)->config_json();
}

StatusOr<ModelSpec> InferenceServer::GetModelSpec(const std::string& name, int64_t version) const {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  auto mv = manager_->Get(name, version);
  if (!mv.ok() && residency_) {
    if (auto kept = residency_->KeptFromLastLoad(name, version)) return kept->spec;
  }
  if (!mv.ok()) return mv.status();
  return (*mv)->spec();
}

StatusOr<std::vector<ModelStatistics>> InferenceServer::GetStatistics(const std::string& name,
                                                                      int64_t version) const {
  if (!name.empty()) INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  std::vector<ModelStatistics> out;
  for (const auto& mv : manager_->ServingVersionsOf(name)) {
    if (version >= 0 && mv->version() != version) continue;
    out.push_back(ModelStatistics{mv->spec().name, mv->version(), mv->stats().Snapshot(),
                                  mv->load_seconds(), mv->spec().instance_count, mv->layout()});
  }
  if (!name.empty() && out.empty()) {
    if (version >= 0 && !manager_->ServingVersionsOf(name).empty()) {
      return InvalidArgument("requested model version is not available for model '" + name + "'");
    }
    return InvalidArgument("requested model '" + name + "' is not available");
  }
  return out;
}

std::vector<ModelIndexEntry> InferenceServer::RepositoryIndex(bool ready_only,
                                                              bool redact_paths) const {
  auto index = manager_->Index(ready_only);
  if (redact_paths) {
    for (auto& e : index) e.reason = RedactPaths(std::move(e.reason), ServerPaths());
  }
  return index;
}

std::vector<std::string> InferenceServer::ServerPaths() const {
  std::vector<std::string> paths = manager_->source().PathsToRedact();
  const std::string& backends = registry_->backend_directory();
  paths.push_back(backends);
  std::error_code ec;
  auto full = std::filesystem::weakly_canonical(backends, ec);
  if (!ec) paths.push_back(full.string());
  auto abs = std::filesystem::absolute(backends, ec);
  if (!ec) paths.push_back(abs.lexically_normal().string());
  return paths;
}

Status InferenceServer::LoadModel(const std::string& name,
                                  const std::optional<std::string>& config_json,
                                  const ModelFiles& files) {
  INFERD_RETURN_IF_ERROR(ControlPlane::CheckModelName(name));
  if (manager_->mode() != ModelControlMode::kExplicit) {
    return Unavailable("explicit model load / unload is not allowed if polling is enabled");
  }
  if (residency_) residency_->BeforeExplicitLoad(name);
  Status s = manager_->Load(name, config_json, files);
  if (s.ok() && residency_) s = residency_->AfterExplicitLoad(name);
  if (s.ok()) return s;
  return Status(s.code(), RedactPaths(s.message(), ServerPaths()));
}

void InferenceServer::UnloadModel(const std::string& name, std::function<void(Status)> done) {
  if (Status s = ControlPlane::CheckModelName(name); !s.ok()) return done(s);
  if (manager_->mode() != ModelControlMode::kExplicit) {
    return done(Unavailable("explicit model load / unload is not allowed if polling is enabled"));
  }
  if (residency_) residency_->AfterExplicitUnload(name);
  manager_->Unload(name, std::move(done));
}

void InferenceServer::Infer(std::unique_ptr<InferRequest> request,
                            std::unique_ptr<InferResponseSink> sink) {
  // Front ends check the name before decoding (an unknown or malformed name
  // is the answer whatever the body holds); checked here too, so that no
  // path reaches the models without it.
  if (Status name = ControlPlane::CheckModelName(request->model_name); !name.ok()) {
    return sink->Finish(std::move(name));
  }
  if (residency_) return residency_->Infer(std::move(request), inflight_.Track(std::move(sink)));
  auto mv = manager_->Get(request->model_name, request->model_version);
  if (!mv.ok()) return sink->Finish(mv.status());
  Serve(*mv, std::move(request), inflight_.Track(std::move(sink)));
}

void InferenceServer::Serve(const std::shared_ptr<ModelVersion>& version,
                            std::unique_ptr<InferRequest> request,
                            std::unique_ptr<InferResponseSink> sink) {
  if (request->trace) {
    // REQUEST_START on the version it runs on; REQUEST_END at the final signal.
    request->trace->Start(version->spec().name, version->version(), request->id);
    sink = std::make_unique<trace::TracingSink>(std::move(sink), request->trace);
  }
  if (request->decoupled_refusal != nullptr && version->spec().decoupled) {
    return sink->Finish(Unimplemented(request->decoupled_refusal));
  }
  Status valid = ValidateRequest(version->spec(), *request, options_.request_limits);
  if (!valid.ok()) return sink->Finish(std::move(valid));
  version->Enqueue(std::move(request), std::move(sink));
}

}  // namespace inferd
