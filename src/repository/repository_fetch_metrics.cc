#include "repository/repository_fetch_metrics.h"

namespace inferd {

void RepositoryFetchMetrics::Register(const std::string& repository,
                                      const std::vector<std::string>& error_kinds) {
  MutexLock lock(mu_);
  RepositoryFetchCounts& c = counts_[repository];
  for (const auto& kind : error_kinds) c.errors.emplace(kind, 0);
}

void RepositoryFetchMetrics::AddListing(const std::string& repository) {
  MutexLock lock(mu_);
  ++counts_[repository].listings;
}

void RepositoryFetchMetrics::AddFetched(const std::string& repository, uint64_t objects,
                                        uint64_t bytes, uint64_t fetch_us) {
  MutexLock lock(mu_);
  RepositoryFetchCounts& c = counts_[repository];
  c.objects += objects;
  c.bytes += bytes;
  c.fetch_us += fetch_us;
}

void RepositoryFetchMetrics::AddCacheHits(const std::string& repository, uint64_t objects) {
  MutexLock lock(mu_);
  counts_[repository].cache_hits += objects;
}

void RepositoryFetchMetrics::AddError(const std::string& repository, const std::string& kind) {
  MutexLock lock(mu_);
  ++counts_[repository].errors[kind];
}

std::map<std::string, RepositoryFetchCounts> RepositoryFetchMetrics::Snapshot() const {
  MutexLock lock(mu_);
  return counts_;
}

}  // namespace inferd
