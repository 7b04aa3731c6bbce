#include "server/model_residency.h"

#include <algorithm>

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Cold-start wait buckets, seconds: a small model loads in tens of
// milliseconds, a large one in seconds; waits end at the request timeout.
const std::vector<double>& WaitBounds() {
  static const std::vector<double> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                              1,     2.5,  5,     10,   30,  60};
  return kBounds;
}

std::string EvictedReason(const std::string& for_model) {
  return "evicted: least recently used, to make room for '" + for_model +
         "' under --model-memory-budget";
}

}  // namespace

// Counts the request out of its model's leases on its final signal, after
// the inner sink took it.
class ModelResidency::LeaseSink final : public ForwardingSink {
 public:
  LeaseSink(ModelResidency* owner, std::string name, std::unique_ptr<InferResponseSink> inner)
      : ForwardingSink(std::move(inner)), owner_(owner), name_(std::move(name)) {}
  ~LeaseSink() override {
    if (!done()) owner_->Release(name_);  // the inner sink reports the missing final signal
  }

 private:
  void OnFinal() override { owner_->Release(name_); }

  ModelResidency* const owner_;
  const std::string name_;
};

ModelResidency::ModelResidency(ResidencyOptions options, ModelManager& manager, Dispatch dispatch,
                               Redispatch redispatch)
    : options_(std::move(options)),
      manager_(manager),
      dispatch_(std::move(dispatch)),
      redispatch_(std::move(redispatch)),
      wait_counts_(WaitBounds().size() + 1, 0) {
  loader_ = std::thread([this] { LoaderLoop(); });
}

ModelResidency::~ModelResidency() { Stop(); }

void ModelResidency::Stop() {
  std::map<std::string, std::vector<Waiter>> waiting;
  {
    MutexLock lock(mu_);
    stop_ = true;
    waiting.swap(waiters_);
    queue_.clear();
  }
  cv_.NotifyAll();
  if (loader_.joinable()) loader_.join();
  for (auto& [name, list] : waiting) {
    for (auto& w : list) w.sink->Finish(Unavailable("server is shutting down"));
  }
}

Status ModelResidency::LoadStartup(const std::vector<std::string>& explicit_models) {
  std::vector<std::string> names(options_.pins.begin(), options_.pins.end());
  {
    MutexLock lock(mu_);
    for (const auto& name : explicit_models) {
      if (name == "*") continue;  // with a budget, everything else loads on demand
      explicit_.insert(name);
      names.push_back(name);
    }
  }
  Status first;
  for (const auto& name : names) {
    Status s = Bring(name, /*wait=*/false);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

void ModelResidency::Infer(std::unique_ptr<InferRequest> request,
                           std::unique_ptr<InferResponseSink> sink) {
  const std::string name = request->model_name;
  Status not_served;
  // Twice at most: a model whose load committed between the lookup and the
  // check below is served by the second lookup.
  for (int attempt = 0; attempt < 2; ++attempt) {
    MutexLock lock(mu_);
    if (stop_) return sink->Finish(Unavailable("server is shutting down"));
    if (evicting_.count(name) > 0) break;  // parked; the loader brings it back
    auto mv = manager_.Get(name, request->model_version);
    if (mv.ok()) {
      ++leases_[name];
      last_use_[name] = ++tick_;
      lock.Unlock();
      return dispatch_(*mv, std::move(request),
                       std::make_unique<LeaseSink>(this, name, std::move(sink)));
    }
    not_served = mv.status();
    lock.Unlock();
    // A model that serves but not in the version asked: that is the answer.
    if (manager_.ServingVersions(name).empty()) break;
    if (attempt == 1) return sink->Finish(not_served);
  }
  if (auto refused = Refused(name)) return sink->Finish(*refused);
  if (!Listed(name)) {
    return sink->Finish(not_served.ok()
                            ? NotFound("Request for unknown model: '" + name + "' is not found")
                            : not_served);
  }
  const auto now = SteadyClock::now();
  const auto wait = request->timeout_us > 0
                        ? std::chrono::duration_cast<SteadyClock::duration>(
                              std::chrono::microseconds(request->timeout_us))
                        : std::chrono::duration_cast<SteadyClock::duration>(options_.default_wait);
  MutexLock lock(mu_);
  if (stop_) return sink->Finish(Unavailable("server is shutting down"));
  auto& list = waiters_[name];
  if (list.empty()) queue_.push_back(name);
  list.push_back(Waiter{std::move(request), std::move(sink), now, now + wait});
  cv_.NotifyAll();
}

void ModelResidency::Release(const std::string& name) {
  MutexLock lock(mu_);
  auto it = leases_.find(name);
  if (it == leases_.end()) return;
  if (--it->second > 0) return;
  leases_.erase(it);
  cv_.NotifyAll();  // the loader may be waiting for room
}

std::optional<Status> ModelResidency::Refused(const std::string& name) {
  {
    MutexLock lock(mu_);
    if (refused_.count(name) == 0) return std::nullopt;
  }
  auto fingerprint = manager_.source().Fingerprint(name);
  MutexLock lock(mu_);
  auto it = refused_.find(name);
  if (it == refused_.end()) return std::nullopt;
  if (fingerprint.ok() && *fingerprint != it->second.fingerprint) {
    refused_.erase(it);  // the model changed: try it again
    return std::nullopt;
  }
  ++refusals_[name];
  return it->second.status;
}

bool ModelResidency::Listed(const std::string& name) {
  if (manager_.Knows(name)) return true;  // loaded once: evicted, failed, unloaded
  // One listing at a time; callers meanwhile wait for it rather than read a
  // listing that is being replaced.
  MutexLock lock(listing_mu_);
  if (SteadyClock::now() - listed_at_ < std::chrono::seconds(1)) return listed_.count(name) > 0;
  listed_at_ = SteadyClock::now();
  auto listed = manager_.source().ListModels();
  if (!listed.ok()) return false;
  listed_.clear();
  for (const auto& [model, listing] : *listed) listed_.insert(model);
  return listed_.count(name) > 0;
}

bool ModelResidency::HasWaiters(const std::string& name) {
  MutexLock lock(mu_);
  auto it = waiters_.find(name);
  return it != waiters_.end() && !it->second.empty();
}

void ModelResidency::LoaderLoop() {
  for (;;) {
    ExpireWaiters();
    std::string name;
    {
      MutexLock lock(mu_);
      if (stop_) return;
      if (queue_.empty()) {
        // Wake for new work, or to expire the earliest waiter.
        auto until = SteadyClock::now() + std::chrono::seconds(1);
        for (const auto& [model, list] : waiters_) {
          for (const auto& w : list) until = std::min(until, w.deadline);
        }
        cv_.WaitUntil(lock, until);
        continue;
      }
      name = queue_.front();
      queue_.pop_front();
      auto it = waiters_.find(name);
      if (it == waiters_.end() || it->second.empty()) continue;  // all expired
    }
    Answer(name, Bring(name, /*wait=*/true));
  }
}

Status ModelResidency::Bring(const std::string& name, bool wait) {
  if (manager_.ResidentFootprints().count(name) > 0) return Status::Ok();
  uint64_t estimate = 0;
  {
    MutexLock lock(mu_);
    estimate = EstimateFootprint(known_bytes_, recent_bytes_, name);
  }
  for (;;) {
    const EvictionChoice choice = MakeRoom(name, estimate);
    // No waiting at start-up (nothing is busy), nor when only pinned and
    // explicit models hold the memory (the estimate may be high: the load
    // is measured, then made to fit or refused).
    if (choice.fits || !choice.fits_when_idle || !wait) break;
    ExpireWaiters();
    if (!HasWaiters(name)) return Unavailable("no request waits for model '" + name + "'");
    MutexLock lock(mu_);
    if (stop_) return Unavailable("server is shutting down");
    cv_.WaitFor(lock, std::chrono::milliseconds(50));  // a lease ending wakes it
  }
  Status loaded = manager_.Load(name, std::nullopt);
  const auto bytes = manager_.ResidentFootprints();
  auto it = bytes.find(name);
  if (!loaded.ok() || it == bytes.end()) {
    Status why =
        Unavailable(loaded.ok() ? "model '" + name + "' has no serving version" : loaded.message());
    Refuse(name, why);
    return why;
  }
  const uint64_t footprint = it->second;
  bool pinned = false;
  if (auto mv = manager_.Get(name, -1); mv.ok()) {
    auto p = (*mv)->spec().parameters.find("residency");
    if (p != (*mv)->spec().parameters.end()) {
      auto parsed = ParseResidencyParameter(p->second);
      if (!parsed.ok()) {
        INFERD_LOG(Warning) << "model '" << EscapeControl(name)
                            << "': " << EscapeControl(parsed.status().message());
      }
      pinned = parsed.ok() && *parsed;
    }
  }
  {
    MutexLock lock(mu_);
    Measured(name, footprint);
    if (pinned) config_pins_.insert(name);
    last_use_[name] = ++tick_;
  }
  if (footprint > options_.budget_bytes) {
    Status why = Unavailable(TooLargeReason(name, footprint, options_.budget_bytes));
    manager_.Evict(name, "refused: " + why.message());
    Refuse(name, why);
    return why;
  }
  if (Status room = CheckRoom(name); !room.ok()) return room;
  Keep(name);
  {
    MutexLock lock(mu_);
    ++loads_[name];
  }
  INFERD_VLOG(1) << "model '" << EscapeControl(name) << "' is resident (" << footprint << " bytes)";
  return Status::Ok();
}

Status ModelResidency::CheckRoom(const std::string& name) {
  std::string why;
  {
    MutexLock lock(mu_);
    auto it = no_room_.find(name);
    if (it == no_room_.end()) return Status::Ok();
    why = std::move(it->second);
    no_room_.erase(it);
  }
  manager_.Evict(name, "refused: " + why);
  return Unavailable(why);
}

void ModelResidency::Refuse(const std::string& name, Status status) {
  auto fingerprint = manager_.source().Fingerprint(name);
  MutexLock lock(mu_);
  refused_[name] = Refusal{std::move(status), fingerprint.ok() ? *fingerprint : std::string()};
}

std::vector<ResidentModel> ModelResidency::ResidentLocked(
    const std::map<std::string, uint64_t>& bytes) const {
  std::vector<ResidentModel> out;
  for (const auto& [name, size] : bytes) {
    ResidentModel m;
    m.name = name;
    m.bytes = size;
    if (auto it = last_use_.find(name); it != last_use_.end()) m.last_use = it->second;
    m.pinned = options_.pins.count(name) > 0 || config_pins_.count(name) > 0;
    m.protected_explicit = !options_.evict_explicit && explicit_.count(name) > 0;
    if (auto it = leases_.find(name); it != leases_.end()) m.leases = it->second;
    out.push_back(std::move(m));
  }
  return out;
}

EvictionChoice ModelResidency::MakeRoom(const std::string& name, uint64_t incoming) {
  const auto bytes = manager_.ResidentFootprints();
  EvictionChoice choice;
  {
    MutexLock lock(mu_);
    choice = ChooseEvictions(ResidentLocked(bytes), options_.budget_bytes, incoming, name);
    for (const auto& victim : choice.victims) evicting_.insert(victim);
  }
  for (const auto& victim : choice.victims) {
    manager_.Evict(victim, EvictedReason(name));
    MutexLock lock(mu_);
    evicting_.erase(victim);
    ++evictions_[victim];
  }
  return choice;
}

void ModelResidency::MakeRoomForLoaded(const std::string& name, uint64_t bytes,
                                       const ModelManagerOptions::Evictor& evict) {
  if (bytes > options_.budget_bytes) return;  // refused once committed; evict nobody for it
  // Busy models finish their requests in milliseconds: wait that long for
  // them rather than serve above the budget. Bounded, because a busy model
  // may itself wait for this load (an ensemble whose step is this model).
  const auto give_up = SteadyClock::now() + std::chrono::seconds(2);
  EvictionChoice choice;
  for (;;) {
    const auto resident = manager_.ResidentFootprints();
    MutexLock lock(mu_);
    // Under the lock: no request leases a victim between the choice and its eviction.
    choice = ChooseEvictions(ResidentLocked(resident), options_.budget_bytes, bytes, name);
    for (const auto& victim : choice.victims) {
      evict(victim, EvictedReason(name));
      ++evictions_[victim];
    }
    if (choice.fits || !choice.fits_when_idle || stop_ || SteadyClock::now() >= give_up) break;
    cv_.WaitFor(lock, std::chrono::milliseconds(10));  // a lease ending wakes it
  }
  if (choice.fits) return;
  MutexLock lock(mu_);
  if (!choice.fits_when_idle) {
    // Pinned and explicitly loaded models hold the memory: no room, now.
    no_room_[name] = "no room for model '" + name + "' (" + std::to_string(bytes) +
                     " bytes) under --model-memory-budget of " +
                     std::to_string(options_.budget_bytes) +
                     " bytes: pinned and explicitly loaded models hold the rest";
    return;
  }
  INFERD_LOG(Warning) << "model '" << EscapeControl(name) << "' (" << bytes
                      << " bytes) is resident above --model-memory-budget: the other resident "
                         "models stayed busy";
}

void ModelResidency::Answer(const std::string& name, const Status& status) {
  std::vector<Waiter> list;
  {
    MutexLock lock(mu_);
    auto it = waiters_.find(name);
    if (it == waiters_.end()) return;
    list.swap(it->second);
    waiters_.erase(it);
    for (const auto& w : list) {
      ObserveWait(w.parked);
      if (!status.ok()) ++refusals_[name];
    }
  }
  for (auto& w : list) {
    if (status.ok()) {
      redispatch_(std::move(w.request), std::move(w.sink));
    } else {
      w.sink->Finish(status);
    }
  }
}

void ModelResidency::ExpireWaiters() {
  std::vector<std::pair<std::string, Waiter>> expired;
  {
    MutexLock lock(mu_);
    const auto now = SteadyClock::now();
    for (auto& [name, list] : waiters_) {
      auto keep = std::partition(list.begin(), list.end(),
                                 [&](const Waiter& w) { return w.deadline > now; });
      for (auto it = keep; it != list.end(); ++it) {
        ObserveWait(it->parked);
        ++refusals_[name];
        expired.emplace_back(name, std::move(*it));
      }
      list.erase(keep, list.end());
    }
  }
  for (auto& [name, w] : expired) {
    w.sink->Finish(Unavailable("model '" + name +
                               "' did not become resident before the request's deadline "
                               "(loading it, or waiting for memory under --model-memory-budget)"));
  }
}

void ModelResidency::ObserveWait(std::chrono::steady_clock::time_point parked) {
  const double s = std::chrono::duration<double>(SteadyClock::now() - parked).count();
  const auto& bounds = WaitBounds();
  const size_t bucket = std::lower_bound(bounds.begin(), bounds.end(), s) - bounds.begin();
  ++wait_counts_[bucket];
  wait_sum_ += s;
}

void ModelResidency::BeforeExplicitLoad(const std::string& name) {
  uint64_t estimate = 0;
  {
    MutexLock lock(mu_);
    estimate = EstimateFootprint(known_bytes_, recent_bytes_, name);
  }
  (void)MakeRoom(name, estimate);
}

Status ModelResidency::AfterExplicitLoad(const std::string& name) {
  const auto bytes = manager_.ResidentFootprints();
  auto it = bytes.find(name);
  if (it == bytes.end()) return Status::Ok();
  if (it->second > options_.budget_bytes) {
    Status why = Unavailable(TooLargeReason(name, it->second, options_.budget_bytes));
    manager_.Evict(name, "refused: " + why.message());
    return why;
  }
  INFERD_RETURN_IF_ERROR(CheckRoom(name));
  Keep(name);
  {
    MutexLock lock(mu_);
    Measured(name, it->second);
    explicit_.insert(name);
    refused_.erase(name);
    last_use_[name] = ++tick_;
    ++loads_[name];
  }
  return Status::Ok();
}

void ModelResidency::Measured(const std::string& name, uint64_t bytes) {
  constexpr size_t kRecentLoads = 8;
  known_bytes_[name] = bytes;
  recent_bytes_.push_back(bytes);
  if (recent_bytes_.size() > kRecentLoads) recent_bytes_.erase(recent_bytes_.begin());
}

void ModelResidency::Keep(const std::string& name) {
  auto mv = manager_.Get(name, -1);
  if (!mv.ok()) return;
  Kept kept{(*mv)->spec(), (*mv)->config_json(), (*mv)->version()};
  MutexLock lock(mu_);
  kept_[name] = std::move(kept);
}

std::optional<ModelResidency::Kept> ModelResidency::KeptFromLastLoad(const std::string& name,
                                                                     int64_t version) const {
  if (!manager_.ServingVersions(name).empty()) return std::nullopt;
  MutexLock lock(mu_);
  auto it = kept_.find(name);
  if (it == kept_.end() || (version >= 0 && version != it->second.version)) return std::nullopt;
  return it->second;
}

void ModelResidency::AfterExplicitUnload(const std::string& name) {
  MutexLock lock(mu_);
  explicit_.erase(name);
}

ResidencySnapshot ModelResidency::Snapshot() const {
  ResidencySnapshot out;
  out.model_bytes = manager_.ResidentFootprints();
  out.budget_bytes = options_.budget_bytes;
  for (const auto& [name, bytes] : out.model_bytes) out.resident_bytes += bytes;
  MutexLock lock(mu_);
  out.loads = loads_;
  out.evictions = evictions_;
  out.refusals = refusals_;
  out.wait_bounds = WaitBounds();
  out.wait_counts = wait_counts_;
  out.wait_sum = wait_sum_;
  return out;
}

}  // namespace inferd
