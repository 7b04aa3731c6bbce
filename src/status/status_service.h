// StatusService: what the status page shows (docs/status_page.md), as the
// JSON of GET /inferd/status: the server (id, version, uptime,
// extensions), every model version with its state and reason, its
// instances, queue and in-flight requests now, and its figures over the
// last minute (stats_window.h) with a small chart, and the shared-memory
// regions.
//
// A sampler thread snapshots every serving version's statistics once per
// `sample_interval` (1 s) into a StatsWindow of `window` (60 s); snapshots
// are stamped with the sampler's scheduled tick, as Prometheus stamps a
// scrape with its scheduled time. The repository index, which lists the
// repositories (an S3 listing for s3:// ones), is read at most once per
// `index_ttl` however many pages poll.
//
// Ownership: holds a reference to the server, which must outlive it.
// Threading: Json() may be called from any thread, concurrently; it never
// waits for a model or a load (the index is the one call that may read a
// repository, as GET /v2/repository/index does). The destructor stops and
// joins the sampler.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "server/inference_server.h"
#include "status/stats_window.h"

namespace inferd::status {

struct StatusServiceOptions {
  std::chrono::milliseconds sample_interval{1000};
  std::chrono::seconds window{60};
  std::chrono::seconds chart_step{5};
  std::chrono::milliseconds index_ttl{2000};
};

// Which parts of the answer a request may see: the restricted-API rules
// (frontend/restricted_api.h) decide per part; an empty string serves the
// part, anything else is the refusal, sent instead (under "restricted").
struct StatusAccess {
  std::string metadata;       // server id, version, uptime, extensions
  std::string repository;     // the models, their states and reasons, the control mode
  std::string statistics;     // instances, queue, in-flight, windowed figures, charts
  std::string shared_memory;  // system and CUDA regions
};

class StatusService {
 public:
  StatusService(InferenceServer& server, StatusServiceOptions options = {});
  ~StatusService();
  StatusService(const StatusService&) = delete;
  StatusService& operator=(const StatusService&) = delete;

  // The body of GET /inferd/status. `extensions`: the protocol's list (the
  // HTTP front end adds its own to the server's).
  std::string Json(const StatusAccess& access, const std::vector<std::string>& extensions)
      INFERD_EXCLUDES(mu_, index_mu_);

  // Takes one snapshot now, stamped `t_s` (tests; the sampler calls it).
  void Sample(double t_s) INFERD_EXCLUDES(mu_);

 private:
  void Run() INFERD_EXCLUDES(mu_);
  std::vector<ModelIndexEntry> Index() INFERD_EXCLUDES(index_mu_);

  InferenceServer& server_;
  const StatusServiceOptions options_;

  Mutex mu_;
  CondVar wake_;
  bool stop_ INFERD_GUARDED_BY(mu_) = false;
  StatsWindow window_ INFERD_GUARDED_BY(mu_);

  Mutex index_mu_;
  std::vector<ModelIndexEntry> index_ INFERD_GUARDED_BY(index_mu_);
  std::chrono::steady_clock::time_point index_time_ INFERD_GUARDED_BY(index_mu_){};
  bool index_valid_ INFERD_GUARDED_BY(index_mu_) = false;

  std::thread sampler_;  // last: started once everything above exists
};

// Seconds since the process started (the status page's uptime).
double ProcessUptimeSeconds();

}  // namespace inferd::status
