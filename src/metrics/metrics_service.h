// MetricsService: the Prometheus endpoint. Serves `GET /metrics` (and
// `/metrics/`) on its own HTTP listener in the text format 0.0.4, and
// refreshes the host (CPU, RAM) and GPU gauges on a background thread every
// `interval_ms`.
//
// A scrape reads statistics snapshots (atomics) of every ready model
// version and the last host/GPU sample; it never waits for inference.
// Per-request counters are therefore current at every scrape; the host and
// GPU gauges are at most one interval old.
//
// Threading: Start/Stop from one thread (main); Render from any thread.
// The InferenceServer must outlive the service.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "frontend/http/http_server.h"
#include "metrics/gpu_metrics.h"
#include "metrics/system_metrics.h"
#include "server/inference_server.h"

namespace inferd::metrics {

struct MetricsOptions {
  std::string address = "0.0.0.0";
  uint16_t port = 8002;  // 0: pick a free port
  int interval_ms = 2000;
  // NVML library to try for GPU metrics; empty: no GPU metrics.
  std::string gpu_library = "libnvidia-ml.so.1";
  // Host metrics sources (tests point them elsewhere).
  std::string proc_stat = "/proc/stat";
  std::string proc_meminfo = "/proc/meminfo";
};

class MetricsService {
 public:
  MetricsService(const InferenceServer& server, MetricsOptions options);
  ~MetricsService();  // Stop()

  // Takes the first host sample, opens NVML if present, binds the listener
  // and starts the sampler. UNAVAILABLE if the address cannot be bound.
  Status Start();
  // The bound port (after Start).
  uint16_t port() const;
  // Stops the listener and the sampler. Idempotent.
  void Stop();

  // The /metrics body.
  std::string Render() const;

 private:
  void Handle(const http::HttpRequest& request,
              const std::shared_ptr<http::HttpResponder>& responder) const;
  void SampleOnce();
  void SamplerLoop();

  const InferenceServer& server_;
  const MetricsOptions options_;
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<GpuMetricsSource> gpu_;  // used by the sampler thread only

  std::optional<CpuTimes> last_cpu_;  // sampler thread only

  mutable std::mutex mu_;
  SystemSample system_;          // guarded by mu_
  std::vector<GpuSample> gpus_;  // guarded by mu_
  bool stop_ = false;            // guarded by mu_
  std::condition_variable cv_;
  std::thread sampler_;
};

}  // namespace inferd::metrics
