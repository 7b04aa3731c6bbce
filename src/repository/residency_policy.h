// The pure decisions of model residency (--model-memory-budget): which
// resident models to evict so that a load fits, what a model's footprint
// is, how much room to reserve for a model not loaded yet, and how the
// budget flag and a model's residency parameter read. No state, no locks,
// no clock: server/model_residency.h owns the state and calls these.
//
// Thread-compatible (pure functions).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace inferd {

// One model that holds memory now, as the residency sees it.
struct ResidentModel {
  std::string name;
  uint64_t bytes = 0;               // its recorded footprint (every serving version)
  uint64_t last_use = 0;            // a logical tick: larger is more recent
  bool pinned = false;              // never evicted
  bool protected_explicit = false;  // loaded through the load API, not evictable
  int64_t leases = 0;               // requests accepted and not answered
};

struct EvictionChoice {
  // Least recently used first; every one idle, unpinned, unprotected and
  // not the model being made room for.
  std::vector<std::string> victims;
  // Whether resident + incoming fits the budget once the victims are gone.
  // When false, `victims` is every evictable model: the caller evicts them
  // and waits for busy models to become idle.
  bool fits = false;
  // Whether it would fit once the busy (leased) models also went: waiting
  // for them to finish can help.
  bool fits_when_idle = false;
};

// What to evict so that `incoming` more bytes fit `budget`, given every
// resident model; `exclude` (the model being loaded) is never a victim.
EvictionChoice ChooseEvictions(const std::vector<ResidentModel>& resident, uint64_t budget,
                               uint64_t incoming, const std::string& exclude);

// The room to reserve before loading `name`: its footprint from an earlier
// load when known, else the largest of the `recent` loads' footprints (a
// repository of look-alikes is the common case; overestimating only evicts
// a little early, and a window forgets the first load's one-time costs),
// else 0 (the first load is measured, then made to fit).
uint64_t EstimateFootprint(const std::map<std::string, uint64_t>& known,
                           const std::vector<uint64_t>& recent, const std::string& name);

// A version's footprint: what the allocator handed out across its load
// (heap bytes in use after minus before; negative is 0), at least the
// bytes of its files, plus the device memory it took.
uint64_t Footprint(int64_t heap_before, int64_t heap_after, uint64_t file_bytes,
                   uint64_t device_bytes);

// The refusal of a model whose footprint alone exceeds the budget.
std::string TooLargeReason(const std::string& name, uint64_t footprint, uint64_t budget);

// --model-memory-budget: bytes, with an optional binary suffix K, M, G or T
// (KiB...; "Ki"/"KiB" spellings too); > 0.
StatusOr<uint64_t> ParseByteSize(const std::string& flag, const std::string& value);

// A config's `parameters { key: "residency" ... }` string value: "pinned"
// pins; "" (absent) or "lru" does not; anything else is an error.
StatusOr<bool> ParseResidencyParameter(const std::string& value);

}  // namespace inferd
