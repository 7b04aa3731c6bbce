#include "trace/tracer.h"

#include <mutex>

namespace inferd::trace {
namespace {

TraceSettingValues Defaults(const TraceConfig& c) {
  TraceSettingValues v;
  v.level = c.level;
  v.rate = c.rate;
  v.count = c.count;
  v.log_frequency = c.log_frequency;
  return v;
}

// One field of a rebuilt scope (Triton's rule): cleared → the fallback's;
// given → the new value; else the scope's own if it had one, else the
// fallback's. Returns whether the field is now the scope's own.
template <typename T>
bool Resolve(const TraceSettingChange<T>& change, bool had_own, const T& own, const T& fallback,
             T& out) {
  if (change.clear) {
    out = fallback;
    return false;
  }
  if (change.value) {
    out = *change.value;
    return true;
  }
  out = had_own ? own : fallback;
  return had_own;
}

}  // namespace

void Tracer::Scope::Set(const TraceSettingValues& v, const Specified& s, bool can_trace) {
  level.store(v.level, std::memory_order_relaxed);
  rate.store(v.rate, std::memory_order_relaxed);
  log_frequency.store(v.log_frequency, std::memory_order_relaxed);
  count_left.store(v.count, std::memory_order_relaxed);
  sample.store(0, std::memory_order_relaxed);
  specified = s;
  valid.store(can_trace, std::memory_order_release);
}

TraceSettingValues Tracer::Scope::Values() const {
  TraceSettingValues v;
  v.level = level.load(std::memory_order_relaxed);
  v.rate = rate.load(std::memory_order_relaxed);
  v.count = count_left.load(std::memory_order_relaxed);
  v.log_frequency = log_frequency.load(std::memory_order_relaxed);
  return v;
}

Tracer::Tracer(TraceConfig config, std::shared_ptr<TraceCollector> collector)
    : config_(std::move(config)), collector_(std::move(collector)), defaults_(Defaults(config_)) {
  MutexLock lock(write_mu_);
  global_.Set(defaults_, Specified{},
              defaults_.level != kTraceLevelOff && InvalidReason(defaults_).empty());
  RefreshActive();
}

std::string Tracer::InvalidReason(const TraceSettingValues& v) const {
  if (config_.mode == TraceMode::kTriton) {
    if (v.rate == 0) return "sample rate must be non-zero";
    if (config_.file.empty()) return "trace file name is not given";
  }
  return "";
}

void Tracer::RefreshActive() {
  std::shared_lock read(mu_);
  bool active = global_.valid.load(std::memory_order_relaxed);
  for (const auto& [name, scope] : models_) active = active || scope->valid;
  active_.store(active, std::memory_order_relaxed);
  has_models_.store(!models_.empty(), std::memory_order_release);
}

std::shared_ptr<RequestTrace> Tracer::Sample(std::string_view model,
                                             std::optional<TraceContext> propagated) {
  if (!Active()) return nullptr;
  // Only a model with settings of its own needs the lock (and the lookup).
  std::shared_lock<std::shared_mutex> lock(mu_, std::defer_lock);
  Scope* scope = &global_;
  if (has_models_.load(std::memory_order_acquire)) {
    lock.lock();
    if (auto it = models_.find(model); it != models_.end()) scope = it->second.get();
  }
  if (!scope->valid.load(std::memory_order_acquire)) return nullptr;
  // A caller's context decides (OpenTelemetry's parent-based sampling):
  // `sampled` set, traced whatever the rate and count; clear, not traced
  // (the caller did not record its part, so ours would be an orphan).
  const bool otel_context = propagated.has_value() && config_.mode == TraceMode::kOpenTelemetry;
  if (otel_context && (propagated->flags & 0x01) == 0) return nullptr;
  const bool forced = otel_context;
  bool hit = false;
  if (const uint32_t rate = scope->rate.load(std::memory_order_relaxed); rate != 0) {
    int64_t left = scope->count_left.load(std::memory_order_relaxed);
    if (left == 0 && !forced) return nullptr;
    const uint64_t n = scope->sample.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n % rate == 0) {
      if (left < 0) {
        hit = true;  // no limit
      } else {
        while (left > 0 && !hit) {
          hit = scope->count_left.compare_exchange_weak(left, left - 1, std::memory_order_relaxed);
        }
      }
    }
  }
  if (!hit && !forced) return nullptr;
  const uint32_t level = scope->level.load(std::memory_order_relaxed);
  const uint32_t log_frequency = scope->log_frequency.load(std::memory_order_relaxed);
  if (lock.owns_lock()) lock.unlock();
  sampled_.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<RequestTrace>(NextTraceId(), level, log_frequency, std::string(model),
                                        collector_, std::move(propagated));
}

TraceSettingValues Tracer::Get(const std::string& model) const {
  std::shared_lock lock(mu_);
  if (!model.empty()) {
    if (auto it = models_.find(model); it != models_.end()) return it->second->Values();
  }
  return global_.Values();
}

Status Tracer::Update(const std::string& model, const TraceSettingUpdate& update) {
  MutexLock lock(write_mu_);
  INFERD_RETURN_IF_ERROR(Rebuild(model, update));
  if (model.empty()) {
    // Models that follow some global field follow this update too.
    std::vector<std::string> followers;
    {
      std::shared_lock read(mu_);
      for (const auto& [name, scope] : models_) {
        const Specified& s = scope->specified;
        if (!(s.level && s.rate && s.count && s.log_frequency)) followers.push_back(name);
      }
    }
    // A follower the new global values would make invalid (its own rate 0
    // under a level now on) keeps its settings: the global update stands.
    for (const auto& name : followers) (void)Rebuild(name, TraceSettingUpdate{});
  }
  RefreshActive();
  return Status::Ok();
}

Status Tracer::Rebuild(const std::string& model, const TraceSettingUpdate& update) {
  TraceSettingValues fallback, own;
  Specified had;
  bool exists = false;
  {
    std::shared_lock read(mu_);
    if (model.empty()) {
      fallback = defaults_;
      own = global_.Values();
      had = global_.specified;
      exists = true;
    } else {
      fallback = global_.Values();
      if (auto it = models_.find(model); it != models_.end()) {
        own = it->second->Values();
        had = it->second->specified;
        exists = true;
      }
    }
  }
  TraceSettingValues v;
  Specified s;
  s.level = Resolve(update.level, exists && had.level, own.level, fallback.level, v.level);
  s.rate = Resolve(update.rate, exists && had.rate, own.rate, fallback.rate, v.rate);
  s.count = Resolve(update.count, exists && had.count, own.count, fallback.count, v.count);
  s.log_frequency = Resolve(update.log_frequency, exists && had.log_frequency, own.log_frequency,
                            fallback.log_frequency, v.log_frequency);
  const std::string reason = InvalidReason(v);
  if (!reason.empty() && v.level != kTraceLevelOff) {
    return InvalidArgument("Attempting to set invalid trace setting :" + reason);
  }
  const bool can_trace = v.level != kTraceLevelOff && reason.empty();
  if (model.empty()) {
    global_.Set(v, s, can_trace);
    return Status::Ok();
  }
  std::unique_lock write(mu_);
  if (!(s.level || s.rate || s.count || s.log_frequency)) {
    models_.erase(model);  // nothing of its own left: the model follows the global setting
  } else {
    auto& scope = models_[model];
    if (!scope) scope = std::make_unique<Scope>();
    scope->Set(v, s, can_trace);
  }
  return Status::Ok();
}

}  // namespace inferd::trace
