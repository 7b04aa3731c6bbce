#include "discovery/host_union.h"

namespace inferd::discovery {

HostUnion::HostUnion(size_t sources, HostSource::OnChange on_change)
    : on_change_(std::move(on_change)), sets_(sources) {}

void HostUnion::Update(size_t index, const HostSet& set) {
  MutexLock deliver(deliver_mu_);
  HostSet merged;
  {
    MutexLock lock(mu_);
    if (index >= sets_.size()) return;
    sets_[index] = set;
    for (const HostSet& s : sets_) merged.insert(s.begin(), s.end());
    if (reported_ && merged == current_) return;
    current_ = merged;
  }
  reported_ = true;
  if (on_change_) on_change_(merged);
}

HostSource::OnChange HostUnion::SlotCallback(size_t index) {
  return [this, index](const HostSet& set) { Update(index, set); };
}

HostSet HostUnion::Current() const {
  MutexLock lock(mu_);
  return current_;
}

}  // namespace inferd::discovery
