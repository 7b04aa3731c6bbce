// ShmPool: input slots in POSIX shared memory, registered with inferd as
// system shared-memory regions, for a middleman that runs on inferd's host
// (the in-pod deployment). A request's input bytes are written into a free
// slot and the ModelInfer request names the slot's region instead of
// carrying the bytes (`shared_memory_region`/`_offset`/`_byte_size`), so
// inferd reads them in place.
//
// One object (/inferd-mm-<pid>-<n>, created here, unlinked by the
// destructor) holds `slots` slots of `slot_bytes`; each slot is its own
// region "<object>-<i>" so that inferd checks every request's range against
// its own slot. Regions are registered lazily on first use and again after
// Invalidate (inferd restarted and forgot them); until registration has
// succeeded, Acquire returns no lease and callers send bytes inline.
// inferd must run with --allow-client-shm=true.
//
// Threading: every method may be called from any thread. A Lease is owned by
// one request and returns its slot when destroyed, which must happen after
// inferd answered the request that used it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "middleman/inferd_pool.h"

namespace inferd::middleman {

struct ShmPoolOptions {
  int slots = 16;
  size_t slot_bytes = 1 << 20;
};

class ShmPool {
 public:
  class Lease {
   public:
    Lease(ShmPool* pool, int slot) : pool_(pool), slot_(slot) {}
    ~Lease() { pool_->Release(slot_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    uint8_t* data() const { return pool_->base_ + pool_->options_.slot_bytes * slot_; }
    size_t capacity() const { return pool_->options_.slot_bytes; }
    const std::string& region() const { return pool_->regions_[slot_]; }

   private:
    ShmPool* pool_;
    int slot_;
  };

  // Creates and maps the object; registration waits for the first Acquire.
  static StatusOr<std::unique_ptr<ShmPool>> Create(ShmPoolOptions options, InferdPool& inferd,
                                                   MetricsRegistry* metrics);
  // Unregisters the regions (briefly waiting for inferd), unmaps, unlinks.
  ~ShmPool();

  // A free slot of at least `bytes`, or nullptr: too large, none free, or
  // the regions are not registered (yet).
  std::unique_ptr<Lease> Acquire(size_t bytes);

  // Starts registering the regions unless they are registered or being
  // registered (Acquire does this too); returns at once.
  void Register();

  // inferd does not know the regions any more: register them again.
  void Invalidate();

 private:
  ShmPool(ShmPoolOptions options, InferdPool& inferd, MetricsRegistry* metrics);
  void Release(int slot);
  void RegisterAsync();

  const ShmPoolOptions options_;
  InferdPool& inferd_;
  MetricsRegistry* metrics_;
  std::string key_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<std::string> regions_;

  enum class State { kUnregistered, kRegistering, kReady };
  std::mutex mu_;
  std::condition_variable registered_;  // state_ left kRegistering
  State state_ = State::kUnregistered;
  std::chrono::steady_clock::time_point next_attempt_{};
  std::vector<int> free_;
};

}  // namespace inferd::middleman
