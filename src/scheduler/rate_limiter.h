// RateLimiter: Triton's rate limiter (--rate-limit=execution_count). Model
// instances whose instance group has a `rate_limiter` register here; before
// each execution such an instance asks for the resources its group declares
// (Acquire) and gives them back after (Release). An instance runs only when,
// on its device (or across the server, for `global` resources), enough
// copies of each are free.
//
// Capacity of a resource: what --rate-limit-resource gives it (NAME:COUNT
// for every device, NAME:COUNT:DEVICE for one; the device is ignored for a
// global resource), else the largest count any registered instance asks for
// (per device). Capacities follow registrations: an unload can lower them.
//
// Who runs next: among the instances waiting, the one with the smallest
// execution_count × max(priority, 1), the earliest waiter on a tie. Only that
// instance can be granted: when its resources are not free, the others wait
// too (no starvation of an instance that asks for many copies). An execution
// counts from the grant; a grant given back unused (Withdraw) does not count.
//
// Threading: every method is thread-safe. Acquire blocks the calling
// instance thread; nothing else blocks. Callers may hold their own locks
// when calling anything but Acquire (the limiter never calls out).
// Errors: Register refuses, with a message naming the models, a resource
// both global and per-device, and a --rate-limit-resource capacity smaller
// than an instance's count (it could never run).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_annotations.h"

namespace inferd {

struct RateLimitResource {
  std::string name;
  bool global = false;
  uint32_t count = 0;
};

// One model instance as the limiter sees it.
struct RateLimitedInstance {
  std::string model;  // for messages: "model 'm' version 1 instance 'g_0'"
  int64_t version = 0;
  std::string instance;
  int device = 0;  // CPU instances use device 0
  std::vector<RateLimitResource> resources;
  uint32_t priority = 0;  // 0 behaves as 1
};

// One --rate-limit-resource value.
struct RateLimitResourceOverride {
  std::string name;
  uint32_t count = 0;
  int device = -1;  // -1: every device
};

// Parses NAME:COUNT[:DEVICE] (COUNT and DEVICE non-negative integers).
StatusOr<RateLimitResourceOverride> ParseRateLimitResource(const std::string& value);

class RateLimiter {
 public:
  using Id = uint64_t;  // 0 is never an id
  static constexpr int kGlobal = -1;

  explicit RateLimiter(std::vector<RateLimitResourceOverride> overrides = {});
  ~RateLimiter();
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  // Registers every instance of one model version, or none (error). The
  // ids are in `instances`' order.
  StatusOr<std::vector<Id>> Register(const std::vector<RateLimitedInstance>& instances)
      INFERD_EXCLUDES(mu_);
  // Forgets the instance: a waiting Acquire returns false, held resources
  // are freed. Unknown ids are ignored.
  void Unregister(Id id) INFERD_EXCLUDES(mu_);

  // Blocks until the instance holds its resources (true; also at once when
  // a grant is already there, see Release's `again`) or until Interrupt or
  // Unregister (false; the instance no longer waits).
  bool Acquire(Id id) INFERD_EXCLUDES(mu_);
  // Frees the resources of an execution that ran. With `again` (the
  // instance has more work) it waits again at once, before anyone else is
  // granted, so it competes for the freed resources by its priority; it
  // must then call Acquire (or Withdraw).
  void Release(Id id, bool again) INFERD_EXCLUDES(mu_);
  // The instance no longer wants to run: stops waiting, or gives back a
  // grant it did not use (not counted as an execution).
  void Withdraw(Id id) INFERD_EXCLUDES(mu_);
  // Makes the instance's current Acquire, or else its next one, return
  // false (its scheduler is stopping and should look at its queue again).
  void Interrupt(Id id) INFERD_EXCLUDES(mu_);

  // Introspection (tests, logs): the capacity of each resource on `device`
  // (kGlobal: the global ones), and an instance's execution count.
  std::map<std::string, uint32_t> Capacities(int device) const INFERD_EXCLUDES(mu_);
  uint64_t ExecutionCount(Id id) const INFERD_EXCLUDES(mu_);

 private:
  struct Entry;
  using Key = std::pair<int, std::string>;  // (device or kGlobal, name)

  Status CheckLocked(const std::vector<RateLimitedInstance>& adding) const INFERD_REQUIRES(mu_);
  uint32_t CapacityLocked(const Key& key) const INFERD_REQUIRES(mu_);
  bool FitsLocked(const Entry& e) const INFERD_REQUIRES(mu_);
  void TakeLocked(Entry& e, int sign) INFERD_REQUIRES(mu_);
  void WaitLocked(Entry& e) INFERD_REQUIRES(mu_);
  void UnwaitLocked(Entry& e) INFERD_REQUIRES(mu_);
  // Grants the best waiter(s) while they fit.
  void AllocateLocked() INFERD_REQUIRES(mu_);

  const std::vector<RateLimitResourceOverride> overrides_;
  mutable Mutex mu_;
  Id next_id_ INFERD_GUARDED_BY(mu_) = 1;
  uint64_t next_ticket_ INFERD_GUARDED_BY(mu_) = 0;
  std::map<Id, std::unique_ptr<Entry>> entries_ INFERD_GUARDED_BY(mu_);
  std::vector<Entry*> waiting_ INFERD_GUARDED_BY(mu_);
  std::map<Key, uint32_t> in_use_ INFERD_GUARDED_BY(mu_);
};

// The registrations of one scheduler's instances (index = instance index;
// id 0 = not limited). Unregisters them when destroyed or Reset.
class RateLimitRegistration {
 public:
  RateLimitRegistration() = default;
  RateLimitRegistration(std::shared_ptr<RateLimiter> limiter, std::vector<RateLimiter::Id> ids);
  ~RateLimitRegistration() { Reset(); }
  RateLimitRegistration(RateLimitRegistration&&) noexcept = default;
  RateLimitRegistration& operator=(RateLimitRegistration&& other) noexcept;
  RateLimitRegistration(const RateLimitRegistration&) = delete;
  RateLimitRegistration& operator=(const RateLimitRegistration&) = delete;

  RateLimiter* limiter() const { return limiter_.get(); }
  // The id of instance `index`; 0 when it is not limited.
  RateLimiter::Id id(size_t index) const { return index < ids_.size() ? ids_[index] : 0; }
  bool limited(size_t index) const { return id(index) != 0; }
  // Interrupts every instance's Acquire (the scheduler is stopping).
  void InterruptAll() const;
  void Reset();

 private:
  std::shared_ptr<RateLimiter> limiter_;
  std::vector<RateLimiter::Id> ids_;
};

// One instance thread's side of the limiter: whether it holds a grant or is
// staged (waiting in the limiter after Release with `again`). Used only by
// that thread; a no-op when the instance is not limited.
class RateLimitGate {
 public:
  RateLimitGate(RateLimiter* limiter, RateLimiter::Id id) : limiter_(limiter), id_(id) {}
  bool limited() const { return id_ != 0; }
  bool held() const { return held_; }
  // Blocks until granted (true) or interrupted (false). Call it without the
  // scheduler's lock.
  bool Acquire() {
    held_ = limiter_->Acquire(id_);
    staged_ = false;
    return held_;
  }
  // After an execution; `more`: the instance has more work.
  void Done(bool more) {
    if (!held_) return;
    limiter_->Release(id_, more);
    held_ = false;
    staged_ = more;
  }
  // The instance will not run now: gives back a grant or stops waiting.
  void Drop() {
    if (held_ || staged_) limiter_->Withdraw(id_);
    held_ = staged_ = false;
  }

 private:
  RateLimiter* const limiter_;
  const RateLimiter::Id id_;
  bool held_ = false;
  bool staged_ = false;
};

}  // namespace inferd
