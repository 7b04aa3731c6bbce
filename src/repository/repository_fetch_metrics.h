// RepositoryFetchMetrics: what remote model repositories cost, per
// repository (the S3 URL, e.g. "s3://http://rgw:8080/models/prod": never a
// credential). Remote sources (S3RepositorySource) add to it; the
// Prometheus endpoint renders a snapshot (metrics/repository_metrics.h).
// Local repositories fetch nothing and are not registered.
//
// Ownership: shared by the server (which creates it) and every remote
// source (which add to it).
// Threading: every method may be called from any thread; a short mutex
// guards the counters (a fetch adds once per object, not per byte).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/thread_annotations.h"

namespace inferd {

struct RepositoryFetchCounts {
  uint64_t listings = 0;                   // complete listings of the repository (all pages)
  uint64_t objects = 0;                    // objects downloaded (files and GETs of config.pbtxt)
  uint64_t bytes = 0;                      // bytes of those objects
  uint64_t fetch_us = 0;                   // wall time spent downloading, microseconds
  uint64_t cache_hits = 0;                 // objects served from the local cache instead
  std::map<std::string, uint64_t> errors;  // failed store calls by kind
};

class RepositoryFetchMetrics {
 public:
  // Makes `repository`'s series exist (at 0) before anything happens, with
  // one error series per name in `error_kinds`, so that rate() sees them.
  void Register(const std::string& repository, const std::vector<std::string>& error_kinds)
      INFERD_EXCLUDES(mu_);

  void AddListing(const std::string& repository) INFERD_EXCLUDES(mu_);
  void AddFetched(const std::string& repository, uint64_t objects, uint64_t bytes,
                  uint64_t fetch_us) INFERD_EXCLUDES(mu_);
  void AddCacheHits(const std::string& repository, uint64_t objects) INFERD_EXCLUDES(mu_);
  void AddError(const std::string& repository, const std::string& kind) INFERD_EXCLUDES(mu_);

  // Repository -> its counts now.
  std::map<std::string, RepositoryFetchCounts> Snapshot() const INFERD_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<std::string, RepositoryFetchCounts> counts_ INFERD_GUARDED_BY(mu_);
};

}  // namespace inferd
