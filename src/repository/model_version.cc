#include "repository/model_version.h"

#include "core/classification.h"
#include "core/log.h"
#include "core/response_sink.h"
#include "repository/config_support.h"
#include "repository/instance_layout_config.h"
#include "repository/model_config_util.h"
#include "repository/model_warmup.h"
#include "repository/rate_limit_config.h"
#include "repository/sequence_state_config.h"
#include "scheduler/dynamic_batch_scheduler.h"
#include "scheduler/schedule_log.h"
#include "scheduler/sequence_scheduler.h"
#include "trace/trace_file.h"

namespace inferd {
namespace {

// Counts a request in flight from Enqueue to its final signal (the status
// page's per-version in-flight figure).
class InflightSink final : public ForwardingSink {
 public:
  InflightSink(std::shared_ptr<std::atomic<int64_t>> counter,
               std::unique_ptr<InferResponseSink> inner)
      : ForwardingSink(std::move(inner)), counter_(std::move(counter)) {
    counter_->fetch_add(1, std::memory_order_relaxed);
  }
  // Dropped without a final signal (a producer bug): the inner sink answers
  // the client as it goes; the count must not stay up.
  ~InflightSink() override {
    if (!done()) counter_->fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  void OnFinal() override { counter_->fetch_sub(1, std::memory_order_relaxed); }

  const std::shared_ptr<std::atomic<int64_t>> counter_;
};

// One backend instance per instance group entry, count and device, named
// <group>_<n> in creation order.
StatusOr<std::vector<std::unique_ptr<BackendInstance>>> CreateInstances(
    const inference::ModelConfig& config, BackendModel& model) {
  std::vector<std::unique_ptr<BackendInstance>> instances;
  for (const auto& group : config.instance_group()) {
    const bool gpu = group.kind() == inference::ModelInstanceGroup::KIND_GPU;
    std::vector<int> devices;
    if (gpu) {
      devices.assign(group.gpus().begin(), group.gpus().end());
    } else {
      devices.push_back(0);
    }
    for (int device : devices) {
      for (int i = 0; i < group.count(); ++i) {
        InstanceInfo info;
        info.name = group.name() + "_" + std::to_string(instances.size());
        info.kind =
            gpu ? InstanceKind::kGpu
                : (group.kind() == inference::ModelInstanceGroup::KIND_MODEL ? InstanceKind::kModel
                                                                             : InstanceKind::kCpu);
        info.device_id = device;
        auto inst = model.CreateInstance(info);
        if (!inst.ok()) return inst.status().WithPrefix("instance '" + info.name + "'");
        instances.push_back(std::move(*inst));
      }
    }
  }
  return instances;
}

// The config a version runs with: an automatic instance layout
// (instance_layout_config.h) gets its instance count here, once the
// backend is known to honour thread hints.
inference::ModelConfig LaidOutConfig(const inference::ModelConfig& given,
                                     const BackendRegistry* registry) {
  if (!WantsAutomaticInstanceLayout(given)) return given;
  bool hints = false;
  if (registry != nullptr) {
    auto backend = registry->Find(SpecFromConfig(given));
    hints = backend.ok() && (*backend)->HonoursCpuThreadHint();
  }
  return ResolveInstanceLayout(given, hints, AutomaticInstanceCount());
}

// The automatic instance layout over a stateless model's `instances`; null
// when its config fixes them.
std::shared_ptr<InstanceLayout> MakeLayout(const inference::ModelConfig& config,
                                           const SchedulerConfig& sched,
                                           const ModelIdentity& identity, size_t instances) {
  if (!WantsAutomaticInstanceLayout(config) || sched.kind == SchedulerConfig::Kind::kSequence) {
    return nullptr;
  }
  return std::make_shared<InstanceLayout>(identity.name, identity.version,
                                          static_cast<int>(instances));
}

// The response cache's load-time rules (Triton's texts): a sequence's or a
// decoupled model's answers are not a function of one request's inputs.
Status CheckResponseCache(const inference::ModelConfig& config) {
  if (!config.response_cache().enable()) return Status::Ok();
  if (config.has_sequence_batching()) {
    return InvalidArgument("Response Cache does not currently support model " + config.name() +
                           " with sequence batching scheduler. Please disable the response cache.");
  }
  if (config.model_transaction_policy().decoupled()) {
    return InvalidArgument("Response Cache does not currently support model " + config.name() +
                           " with 'decoupled' transaction policy. Please disable the response "
                           "cache.");
  }
  return Status::Ok();
}

// The version's cache use: on when the config enables it and the server has
// a cache (--cache-config); enabled without one it is ignored, as in Triton.
std::unique_ptr<VersionCache> MakeVersionCache(const inference::ModelConfig& config,
                                               int64_t version, const VersionServices& services,
                                               ModelStats& stats) {
  if (!config.response_cache().enable()) return nullptr;
  if (services.response_cache == nullptr) {
    INFERD_LOG(Info) << "model '" << config.name()
                     << "' enables response_cache but the server has no cache (--cache-config): "
                        "responses are not cached";
    return nullptr;
  }
  stats.EnableCacheStats();
  return std::make_unique<VersionCache>(services.response_cache, config.name(), version, &stats,
                                        services.clock);
}

}  // namespace

StatusOr<std::shared_ptr<ModelVersion>> ModelVersion::Load(const inference::ModelConfig& given,
                                                           const std::string& model_dir,
                                                           int64_t version,
                                                           const VersionServices& services) {
  const inference::ModelConfig config = LaidOutConfig(given, services.registry);
  Clock* clock = services.clock;
  const InferFunction& ensemble_infer = services.ensemble_infer;
  const auto load_start = clock->Now();
  std::shared_ptr<ModelVersion> mv(new ModelVersion());
  mv->spec_ = SpecFromConfig(config);
  mv->stats_.ConfigureHistograms(services.histograms, config.max_batch_size());
  mv->version_ = version;
  mv->config_json_ = ModelConfigToJson(config);
  for (const auto& f : FindUnsupportedConfig(config)) {
    if (f.support != ConfigSupport::kWarned) continue;
    mv->config_warnings_ += (mv->config_warnings_.empty() ? "" : "; ") + f.message;
  }
  INFERD_RETURN_IF_ERROR(LoadClassificationLabels(mv->spec_, model_dir));
  INFERD_RETURN_IF_ERROR(CheckResponseCache(config));
  mv->cache_ = MakeVersionCache(config, version, services, mv->stats_);
  SchedulerConfig sched = SchedulerConfigFromConfig(config);
  if (sched.kind == SchedulerConfig::Kind::kEnsemble) {
    // An ensemble has no backend and no instances: its steps run on their
    // own models through the server's infer entry point.
    INFERD_RETURN_IF_ERROR(EnsembleScheduler::Validate(mv->spec_, sched));
    if (!ensemble_infer) return Internal("ensembles are not available in this context");
    mv->scheduler_ =
        std::make_unique<EnsembleScheduler>(ModelIdentity{mv->spec_.name, version}, mv->spec_,
                                            sched, ensemble_infer, &mv->stats_, clock);
    mv->load_seconds_ = std::chrono::duration<double>(clock->Now() - load_start).count();
    return mv;
  }
  if (services.registry == nullptr) return Internal("no backends in this context");
  auto backend = services.registry->Find(mv->spec_);
  if (!backend.ok()) return backend.status();
  mv->backend_ = *backend;

  auto states = StatesFromConfig(config, model_dir);
  if (!states.ok()) return states.status();
  sched.sequence.states = std::move(*states);
  // The backend may read state inputs and produce state outputs; clients
  // see neither (backends copy the spec they are given).
  const ModelSpec backend_spec = BackendSpecWithStates(mv->spec_, config);

  ModelLoadContext ctx;
  ctx.spec = &backend_spec;
  ctx.model_dir = model_dir;
  ctx.default_model_filename = config.default_model_filename();
  ctx.config_json = mv->config_json_;
  ctx.version = version;
  ctx.version_dir = model_dir + "/" + std::to_string(version);
  ctx.health = mv->health_;
  auto model = mv->backend_->LoadModel(ctx);
  if (!model.ok()) return model.status();
  mv->backend_model_ = std::move(*model);

  auto instances = CreateInstances(config, *mv->backend_model_);
  if (!instances.ok()) return instances.status();
  // --rate-limit=execution_count: the limited instances register now (a
  // conflict fails the load); the scheduler unregisters them at Stop.
  auto limits = RegisterRateLimits(services.rate_limiter, config, mv->spec_.name, version);
  if (!limits.ok()) return limits.status();
  ModelIdentity identity{mv->spec_.name, version, &mv->spec_};
  // model_warmup: each instance thread runs the samples before it takes
  // requests; the version is returned (and turns READY) only after all did.
  auto warmup = InstanceWarmup::Create(config, model_dir, identity, instances->size(), clock);
  if (!warmup.ok()) return warmup.status();
  if (*warmup) {
    sched.instance_start = [w = *warmup](size_t i, BackendInstance& inst) { w->Run(i, inst); };
  }
  sched.layout = mv->layout_ = MakeLayout(config, sched, identity, instances->size());
  if (sched.kind == SchedulerConfig::Kind::kSequence) {
    mv->scheduler_ = std::make_unique<SequenceScheduler>(identity, sched, std::move(*instances),
                                                         &mv->stats_, clock, std::move(*limits));
  } else {
    mv->scheduler_ = std::make_unique<DynamicBatchScheduler>(
        identity, sched, std::move(*instances), &mv->stats_, clock, std::move(*limits));
  }
  if (*warmup) INFERD_RETURN_IF_ERROR((*warmup)->Wait());  // mv's destructor stops the threads
  mv->load_seconds_ = std::chrono::duration<double>(clock->Now() - load_start).count();
  return mv;
}

ModelVersion::~ModelVersion() { Stop(); }

std::optional<LayoutState> ModelVersion::layout() const {
  if (!layout_) return std::nullopt;
  return layout_->state();
}

void ModelVersion::Enqueue(std::unique_ptr<InferRequest> request,
                           std::unique_ptr<InferResponseSink> sink) {
  sink = std::make_unique<InflightSink>(stats_.inflight_counter(), std::move(sink));
  if (cache_) {
    // A hit consumes the request: its id is kept for the log (when verbose).
    const std::string id = LogEnabled(LogLevel::kVerbose, 1) ? request->id : std::string();
    if (cache_->Serve(request, sink)) return LogCacheAnswer(spec_.name, version_, id);
  }
  LogEnqueued(spec_.name, version_, *request);
  if (request->trace) {
    request->trace->Stamp(trace::activity::kQueueStart);
    if (request->trace->tensors()) {
      trace::TraceInputs(*request->trace, trace::activity::kTensorQueueInput, *request);
    }
  }
  auto pending = std::make_unique<PendingRequest>();
  pending->request = std::move(request);
  pending->sink = std::move(sink);
  scheduler_->Enqueue(std::move(pending));
}

void ModelVersion::Stop() {
  if (scheduler_) scheduler_->Stop();
}

}  // namespace inferd
