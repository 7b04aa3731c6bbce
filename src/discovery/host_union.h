// HostUnion: the union of the sets of several sources. Each source reports
// its complete set to its own slot (the callback SlotCallback returns); the
// union calls one callback with the union the first time any source
// reports, then whenever the union changes. A source that has not reported
// yet counts as empty.
//
// Ownership: the union owns its callback; the slot callbacks reference the
// union, which must outlive every source started with them (stop the
// sources first).
// Threading: Update, the slot callbacks and Current may be called from any
// thread, concurrently. Callbacks are serialized: never two at once, in the
// order of the updates. The callback must not call Update (it may call
// Current).
#pragma once

#include <cstddef>
#include <vector>

#include "core/thread_annotations.h"
#include "discovery/host_source.h"

namespace inferd::discovery {

class HostUnion {
 public:
  HostUnion(size_t sources, HostSource::OnChange on_change);
  HostUnion(const HostUnion&) = delete;
  HostUnion& operator=(const HostUnion&) = delete;

  // Source `index` (< sources) now has `set`.
  void Update(size_t index, const HostSet& set) INFERD_EXCLUDES(deliver_mu_, mu_);
  // The callback to give source `index`'s Start.
  HostSource::OnChange SlotCallback(size_t index);
  // The union now (empty before any report).
  HostSet Current() const INFERD_EXCLUDES(mu_);

 private:
  const HostSource::OnChange on_change_;
  Mutex deliver_mu_ INFERD_ACQUIRED_BEFORE(mu_);  // held while computing and calling back
  mutable Mutex mu_;
  std::vector<HostSet> sets_ INFERD_GUARDED_BY(mu_);
  HostSet current_ INFERD_GUARDED_BY(mu_);
  bool reported_ INFERD_GUARDED_BY(deliver_mu_) = false;
};

}  // namespace inferd::discovery
