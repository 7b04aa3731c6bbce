#include "scheduler/rate_limiter.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace inferd {
namespace {

bool ParseUint(const std::string& s, uint64_t max, uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && out <= max;
}

std::string Describe(const RateLimitedInstance& i) {
  return "model '" + i.model + "' version " + std::to_string(i.version) + " instance '" +
         i.instance + "'";
}

std::string Where(int device) {
  return device == RateLimiter::kGlobal ? "globally" : "on device " + std::to_string(device);
}

}  // namespace

StatusOr<RateLimitResourceOverride> ParseRateLimitResource(const std::string& value) {
  const auto bad = [&value](const std::string& why) {
    return InvalidArgument("--rate-limit-resource expects <name>:<count>[:<device>], got '" +
                           value + "': " + why);
  };
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = value.find(':', start);
    parts.push_back(value.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return bad("two or three ':'-separated fields");
  RateLimitResourceOverride o;
  o.name = parts[0];
  if (o.name.empty()) return bad("the resource name is empty");
  uint64_t n = 0;
  if (!ParseUint(parts[1], UINT32_MAX, n)) return bad("the count is not a non-negative integer");
  o.count = static_cast<uint32_t>(n);
  if (parts.size() == 3) {
    if (!ParseUint(parts[2], INT32_MAX, n)) return bad("the device is not a non-negative integer");
    o.device = static_cast<int>(n);
  }
  return o;
}

struct RateLimiter::Entry {
  Id id = 0;
  RateLimitedInstance spec;
  enum class State { kIdle, kWaiting, kGranted } state = State::kIdle;
  uint64_t executions = 0;  // grants used (the execution_count of the policy)
  uint64_t ticket = 0;      // order of arrival among waiters (ties)
  bool interrupted = false;
  bool gone = false;  // unregistered while a thread was in Acquire
  int acquirers = 0;  // threads inside Acquire (keep the entry alive)
  CondVar cv;

  Key KeyOf(const RateLimitResource& r) const { return {r.global ? kGlobal : spec.device, r.name}; }
  uint64_t Scaled() const { return executions * std::max<uint64_t>(1, spec.priority); }
};

RateLimiter::RateLimiter(std::vector<RateLimitResourceOverride> overrides)
    : overrides_(std::move(overrides)) {}

RateLimiter::~RateLimiter() = default;

uint32_t RateLimiter::CapacityLocked(const Key& key) const {
  const auto& [device, name] = key;
  // A flag for this device beats one for every device; for a global
  // resource the device is ignored (the largest count given wins).
  bool given = false;
  uint32_t capacity = 0;
  for (const auto& o : overrides_) {
    if (o.name != name) continue;
    if (device == kGlobal) {
      capacity = given ? std::max(capacity, o.count) : o.count;
      given = true;
    } else if (o.device == device) {
      return o.count;
    } else if (o.device == -1) {
      capacity = o.count;
      given = true;
    }
  }
  if (given) return capacity;
  for (const auto& [id, e] : entries_) {
    if (e->gone) continue;
    for (const auto& r : e->spec.resources) {
      if (e->KeyOf(r) == key) capacity = std::max(capacity, r.count);
    }
  }
  return capacity;
}

Status RateLimiter::CheckLocked(const std::vector<RateLimitedInstance>& adding) const {
  // name -> (global?, who declared it), over the registered and new ones.
  std::map<std::string, std::pair<bool, const RateLimitedInstance*>> kinds;
  std::vector<const RateLimitedInstance*> all;
  for (const auto& [id, e] : entries_) {
    if (!e->gone) all.push_back(&e->spec);
  }
  for (const auto& i : adding) all.push_back(&i);
  for (const RateLimitedInstance* i : all) {
    std::set<std::string> names;
    for (const auto& r : i->resources) {
      if (!names.insert(r.name).second) {
        return InvalidArgument("rate limiter: " + Describe(*i) + " lists resource '" + r.name +
                               "' twice");
      }
      auto [it, added] = kinds.emplace(r.name, std::make_pair(r.global, i));
      if (!added && it->second.first != r.global) {
        const RateLimitedInstance* g = r.global ? i : it->second.second;
        const RateLimitedInstance* d = r.global ? it->second.second : i;
        return InvalidArgument("rate limiter: resource '" + r.name + "' is global for " +
                               Describe(*g) + " but per-device for " + Describe(*d) +
                               "; a resource must be one or the other across loaded models");
      }
    }
  }
  // A --rate-limit-resource capacity below an instance's count: it could
  // never run. (Default capacities always fit.)
  for (const auto& i : adding) {
    for (const auto& r : i.resources) {
      const Key key{r.global ? kGlobal : i.device, r.name};
      const bool overridden = std::any_of(overrides_.begin(), overrides_.end(), [&](const auto& o) {
        return o.name == r.name && (r.global || o.device == -1 || o.device == i.device);
      });
      if (!overridden) continue;
      const uint32_t capacity = CapacityLocked(key);
      if (capacity < r.count) {
        return InvalidArgument("rate limiter: --rate-limit-resource gives resource '" + r.name +
                               "' " + std::to_string(capacity) + " copies " + Where(key.first) +
                               ", fewer than the " + std::to_string(r.count) + " that " +
                               Describe(i) + " needs: it could never run");
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<RateLimiter::Id>> RateLimiter::Register(
    const std::vector<RateLimitedInstance>& instances) {
  MutexLock lock(mu_);
  INFERD_RETURN_IF_ERROR(CheckLocked(instances));
  std::vector<Id> ids;
  for (const auto& spec : instances) {
    auto e = std::make_unique<Entry>();
    e->id = next_id_++;
    e->spec = spec;
    ids.push_back(e->id);
    entries_.emplace(e->id, std::move(e));
  }
  // Larger default capacities may let a waiter run.
  AllocateLocked();
  return ids;
}

void RateLimiter::Unregister(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  if (e.state == Entry::State::kWaiting) UnwaitLocked(e);
  if (e.state == Entry::State::kGranted) TakeLocked(e, -1);
  e.state = Entry::State::kIdle;
  e.gone = true;
  e.cv.NotifyAll();
  if (e.acquirers == 0) entries_.erase(it);
  AllocateLocked();
}

bool RateLimiter::Acquire(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second->gone) return false;
  Entry& e = *it->second;
  if (e.state == Entry::State::kIdle && !e.interrupted) {
    WaitLocked(e);
    AllocateLocked();
  }
  ++e.acquirers;
  while (e.state == Entry::State::kWaiting && !e.interrupted && !e.gone) e.cv.Wait(lock);
  --e.acquirers;
  const bool granted = e.state == Entry::State::kGranted;
  e.interrupted = false;
  if (e.state == Entry::State::kWaiting) {
    UnwaitLocked(e);
    AllocateLocked();  // it may have blocked the head of the line
  }
  if (e.gone) {
    if (e.acquirers == 0) entries_.erase(id);
    return false;
  }
  return granted;
}

void RateLimiter::Release(Id id, bool again) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  if (e.state != Entry::State::kGranted) return;
  TakeLocked(e, -1);
  e.state = Entry::State::kIdle;
  if (again) WaitLocked(e);
  AllocateLocked();
}

void RateLimiter::Withdraw(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = *it->second;
  if (e.state == Entry::State::kWaiting) UnwaitLocked(e);
  if (e.state == Entry::State::kGranted) {
    TakeLocked(e, -1);
    --e.executions;  // counted at the grant, never used
    e.state = Entry::State::kIdle;
  }
  AllocateLocked();
}

void RateLimiter::Interrupt(Id id) {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second->interrupted = true;
  it->second->cv.NotifyAll();
}

std::map<std::string, uint32_t> RateLimiter::Capacities(int device) const {
  MutexLock lock(mu_);
  std::set<std::string> names;
  for (const auto& [id, e] : entries_) {
    if (e->gone) continue;
    for (const auto& r : e->spec.resources) {
      if (e->KeyOf(r).first == device) names.insert(r.name);
    }
  }
  std::map<std::string, uint32_t> out;
  for (const auto& n : names) out[n] = CapacityLocked({device, n});
  return out;
}

uint64_t RateLimiter::ExecutionCount(Id id) const {
  MutexLock lock(mu_);
  auto it = entries_.find(id);
  return it == entries_.end() ? 0 : it->second->executions;
}

bool RateLimiter::FitsLocked(const Entry& e) const {
  for (const auto& r : e.spec.resources) {
    const Key key = e.KeyOf(r);
    auto used = in_use_.find(key);
    const uint64_t in_use = used == in_use_.end() ? 0 : used->second;
    if (in_use + r.count > CapacityLocked(key)) return false;
  }
  return true;
}

void RateLimiter::TakeLocked(Entry& e, int sign) {
  for (const auto& r : e.spec.resources) {
    uint32_t& used = in_use_[e.KeyOf(r)];
    used = sign > 0 ? used + r.count : used - std::min(used, r.count);
  }
}

void RateLimiter::WaitLocked(Entry& e) {
  e.state = Entry::State::kWaiting;
  e.ticket = next_ticket_++;
  waiting_.push_back(&e);
}

void RateLimiter::UnwaitLocked(Entry& e) {
  std::erase(waiting_, &e);
  e.state = Entry::State::kIdle;
}

void RateLimiter::AllocateLocked() {
  while (!waiting_.empty()) {
    auto best = std::min_element(waiting_.begin(), waiting_.end(), [](Entry* a, Entry* b) {
      const uint64_t sa = a->Scaled(), sb = b->Scaled();
      return sa != sb ? sa < sb : a->ticket < b->ticket;
    });
    Entry& e = **best;
    // Strict order: when the best waiter does not fit, nobody jumps it.
    if (!FitsLocked(e)) return;
    waiting_.erase(best);
    TakeLocked(e, +1);
    ++e.executions;
    e.state = Entry::State::kGranted;
    e.cv.NotifyAll();
  }
}

RateLimitRegistration::RateLimitRegistration(std::shared_ptr<RateLimiter> limiter,
                                             std::vector<RateLimiter::Id> ids)
    : limiter_(std::move(limiter)), ids_(std::move(ids)) {}

RateLimitRegistration& RateLimitRegistration::operator=(RateLimitRegistration&& other) noexcept {
  if (this != &other) {
    Reset();
    limiter_ = std::move(other.limiter_);
    ids_ = std::move(other.ids_);
  }
  return *this;
}

void RateLimitRegistration::InterruptAll() const {
  if (!limiter_) return;
  for (RateLimiter::Id id : ids_) {
    if (id != 0) limiter_->Interrupt(id);
  }
}

void RateLimitRegistration::Reset() {
  if (limiter_) {
    for (RateLimiter::Id id : ids_) {
      if (id != 0) limiter_->Unregister(id);
    }
  }
  limiter_.reset();
  ids_.clear();
}

}  // namespace inferd
