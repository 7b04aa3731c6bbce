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

Tracer::Tracer(TraceConfig config, std::shared_ptr<TraceCollector> collector)
    : config_(std::move(config)), collector_(std::move(collector)), defaults_(Defaults(config_)) {
  std::string ignored;
  global_ = MakeScope(defaults_, Specified{}, &ignored);
  MutexLock lock(write_mu_);
  RefreshActive();
}

std::unique_ptr<Tracer::Scope> Tracer::MakeScope(const TraceSettingValues& v, const Specified& s,
                                                 std::string* invalid_reason) const {
  invalid_reason->clear();
  if (config_.mode == TraceMode::kTriton) {
    if (v.rate == 0) {
      *invalid_reason = "sample rate must be non-zero";
    } else if (config_.file.empty()) {
      *invalid_reason = "trace file name is not given";
    }
  }
  const bool valid = v.level != kTraceLevelOff && invalid_reason->empty();
  return std::make_unique<Scope>(v, s, valid);
}

void Tracer::RefreshActive() {
  bool active = global_->valid;
  for (const auto& [name, scope] : models_) active = active || scope->valid;
  active_.store(active, std::memory_order_relaxed);
  has_models_.store(!models_.empty(), std::memory_order_relaxed);
}

std::shared_ptr<RequestTrace> Tracer::Sample(std::string_view model,
                                             std::optional<TraceContext> propagated) {
  if (!Active()) return nullptr;
  uint32_t level = 0, log_frequency = 0;
  {
    std::shared_lock lock(mu_);
    Scope* scope = global_.get();
    if (has_models_.load(std::memory_order_relaxed)) {
      if (auto it = models_.find(model); it != models_.end()) scope = it->second.get();
    }
    if (!scope->valid) return nullptr;
    const bool forced = propagated.has_value() && config_.mode == TraceMode::kOpenTelemetry;
    bool hit = false;
    if (scope->values.rate != 0) {
      int64_t left = scope->count_left.load(std::memory_order_relaxed);
      if (left == 0 && !forced) return nullptr;
      const uint64_t n = scope->sample.fetch_add(1, std::memory_order_relaxed) + 1;
      if (n % scope->values.rate == 0) {
        if (left < 0) {
          hit = true;  // no limit
        } else {
          while (left > 0 && !hit) {
            hit =
                scope->count_left.compare_exchange_weak(left, left - 1, std::memory_order_relaxed);
          }
        }
      }
    }
    if (!hit && !forced) return nullptr;
    level = scope->values.level;
    log_frequency = scope->values.log_frequency;
  }
  sampled_.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<RequestTrace>(NextTraceId(), level, log_frequency, std::string(model),
                                        collector_, std::move(propagated));
}

TraceSettingValues Tracer::Get(const std::string& model) const {
  std::shared_lock lock(mu_);
  const Scope* scope = global_.get();
  if (!model.empty()) {
    if (auto it = models_.find(model); it != models_.end()) scope = it->second.get();
  }
  TraceSettingValues v = scope->values;
  v.count = scope->count_left.load(std::memory_order_relaxed);
  return v;
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
    for (const auto& name : followers) INFERD_RETURN_IF_ERROR(Rebuild(name, TraceSettingUpdate{}));
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
      own = global_->values;
      own.count = global_->count_left.load(std::memory_order_relaxed);
      had = global_->specified;
      exists = true;
    } else {
      fallback = global_->values;
      fallback.count = global_->count_left.load(std::memory_order_relaxed);
      if (auto it = models_.find(model); it != models_.end()) {
        own = it->second->values;
        own.count = it->second->count_left.load(std::memory_order_relaxed);
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
  std::string reason;
  auto scope = MakeScope(v, s, &reason);
  if (!reason.empty() && v.level != kTraceLevelOff) {
    return InvalidArgument("Attempting to set invalid trace setting :" + reason);
  }
  std::unique_lock write(mu_);
  if (model.empty()) {
    global_ = std::move(scope);
  } else if (!(s.level || s.rate || s.count || s.log_frequency)) {
    models_.erase(model);  // nothing of its own left: the model follows the global setting
  } else {
    models_[model] = std::move(scope);
  }
  return Status::Ok();
}

}  // namespace inferd::trace
