#include "repository/version_policy.h"

namespace inferd {

std::set<int64_t> VersionsToLoad(const inference::ModelVersionPolicy& policy,
                                 const std::set<int64_t>& available) {
  std::set<int64_t> out;
  if (policy.has_all()) return available;
  if (policy.has_specific()) {
    for (int64_t v : policy.specific().versions()) {
      if (available.count(v)) out.insert(v);
    }
    return out;
  }
  uint32_t n = policy.has_latest() ? policy.latest().num_versions() : 1;
  for (auto it = available.rbegin(); it != available.rend() && n > 0; ++it, --n) out.insert(*it);
  return out;
}

}  // namespace inferd
