// infer-perf --collect-metrics: scrapes the server's Prometheus endpoint
// during the measurement and summarises what perf_analyzer reports (GPU
// utilization, power, memory used and total, per GPU) and what inferd's
// Triton-named families add: CPU utilization and memory, and the model's
// requests, inferences, executions and per-request times as deltas of the
// nv_inference_* counters over the measured windows (docs/clients.md).
//
// The parsing and summary functions are pure (unit-tested). Threading: a
// MetricsCollector scrapes on its own thread between Start and Stop; Mark
// and Since are called from the measuring thread; one mutex guards the
// connection and the scrapes. Errors: a failed scrape is skipped (Check
// reports the first one before measuring starts).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferd::client {
class HttpClient;
}

namespace inferd::perf {

using MetricsClock = std::chrono::steady_clock;

struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Samples of a text exposition (comments and malformed lines skipped).
std::vector<MetricSample> ParsePrometheus(const std::string& text);

// What one scrape says, for the model `model` (all versions, or `version`).
struct Scrape {
  MetricsClock::time_point at;
  // per GPU uuid: utilization 0..1, power W, memory used and total bytes
  std::map<std::string, std::vector<double>> gpu;
  bool has_cpu = false;
  double cpu_utilization = 0, cpu_memory_used = 0, cpu_memory_total = 0;
  double success = 0, inferences = 0, executions = 0, pending = 0;
  double request_us = 0, queue_us = 0, compute_infer_us = 0;
};
Scrape ReadScrape(const std::vector<MetricSample>& samples, const std::string& model,
                  const std::string& version);

struct GpuSummary {
  std::string uuid;
  double utilization_avg = 0, power_avg_w = 0, memory_used_max = 0, memory_total = 0;
};

// The server's side of the measured windows.
struct ServerMetrics {
  int scrapes = 0;               // 0: nothing was scraped (no summary)
  std::vector<GpuSummary> gpus;  // empty: the server reports no GPU families
  bool has_cpu = false;
  double cpu_utilization_avg = 0, cpu_memory_used_max = 0, cpu_memory_total = 0;
  double requests = 0, inferences = 0, executions = 0;        // counter deltas
  double request_us = 0, queue_us = 0, compute_infer_us = 0;  // per successful request
  double pending_avg = 0;
};

// Gauges averaged (memory: the maximum) over `scrapes`; counters as the
// last minus the first.
ServerMetrics SummarizeScrapes(const std::vector<Scrape>& scrapes);

class MetricsCollector {
 public:
  // `url`: [http://]host:port[/path], path /metrics when absent.
  MetricsCollector(const std::string& url, int interval_ms, std::string model, std::string version);
  ~MetricsCollector();

  bool Check(std::string& error);  // one scrape, now
  void Start();                    // scrapes every interval until Stop
  void Stop();
  void Mark();  // one scrape now (a window's boundary)
  // The summary of the scrapes taken at or after `since`.
  ServerMetrics Since(MetricsClock::time_point since);
  const std::string& url() const { return display_url_; }

 private:
  bool ScrapeOnce(std::string* error);  // with conn_mu_ not held

  std::string display_url_, path_, model_, version_;
  int interval_ms_;
  std::mutex conn_mu_;                        // guards http_ and scrapes_
  std::unique_ptr<client::HttpClient> http_;  // guarded by conn_mu_
  std::vector<Scrape> scrapes_;               // guarded by conn_mu_
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // guarded by stop_mu_
  std::thread thread_;
};

}  // namespace inferd::perf
