#include "perf_metrics.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "inferd/client/http_client.h"

namespace inferd::perf {
namespace {

// Parses `k="v",...` (with \" \\ \n escapes) into `out`; false if malformed.
bool ParseLabels(const std::string& s, std::map<std::string, std::string>& out) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t eq = s.find('=', i);
    if (eq == std::string::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return false;
    std::string key = s.substr(i, eq - i), value;
    size_t j = eq + 2;
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) {
        ++j;
        value += s[j] == 'n' ? '\n' : s[j];
      } else {
        value += s[j];
      }
    }
    if (j >= s.size()) return false;
    out[key] = value;
    i = j + 1;
    if (i < s.size() && s[i] == ',') ++i;
  }
  return true;
}

bool ForModel(const MetricSample& m, const std::string& model, const std::string& version) {
  auto it = m.labels.find("model");
  if (it == m.labels.end() || it->second != model) return false;
  if (version.empty()) return true;
  auto v = m.labels.find("version");
  return v != m.labels.end() && v->second == version;
}

}  // namespace

std::vector<MetricSample> ParsePrometheus(const std::string& text) {
  std::vector<MetricSample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    MetricSample m;
    size_t value_at;
    const size_t brace = line.find('{');
    const size_t space = line.find(' ');
    if (brace != std::string::npos && brace < space) {
      const size_t close = line.rfind('}');
      if (close == std::string::npos || close < brace) continue;
      m.name = line.substr(0, brace);
      if (!ParseLabels(line.substr(brace + 1, close - brace - 1), m.labels)) continue;
      value_at = close + 1;
    } else {
      if (space == std::string::npos) continue;
      m.name = line.substr(0, space);
      value_at = space;
    }
    const char* begin = line.c_str() + value_at;
    char* end = nullptr;
    m.value = std::strtod(begin, &end);
    if (end == begin) continue;
    out.push_back(std::move(m));
  }
  return out;
}

Scrape ReadScrape(const std::vector<MetricSample>& samples, const std::string& model,
                  const std::string& version) {
  static const std::map<std::string, int> kGpu = {{"nv_gpu_utilization", 0},
                                                  {"nv_gpu_power_usage", 1},
                                                  {"nv_gpu_memory_used_bytes", 2},
                                                  {"nv_gpu_memory_total_bytes", 3}};
  static const std::map<std::string, double Scrape::*> kModel = {
      {"nv_inference_request_success", &Scrape::success},
      {"nv_inference_count", &Scrape::inferences},
      {"nv_inference_exec_count", &Scrape::executions},
      {"nv_inference_pending_request_count", &Scrape::pending},
      {"nv_inference_request_duration_us", &Scrape::request_us},
      {"nv_inference_queue_duration_us", &Scrape::queue_us},
      {"nv_inference_compute_infer_duration_us", &Scrape::compute_infer_us}};
  Scrape s;
  s.at = MetricsClock::now();
  for (const auto& m : samples) {
    if (auto g = kGpu.find(m.name); g != kGpu.end()) {
      auto uuid = m.labels.find("gpu_uuid");
      if (uuid == m.labels.end()) continue;
      auto& v = s.gpu[uuid->second];
      v.resize(4, 0);
      v[size_t(g->second)] = m.value;
    } else if (m.name == "nv_cpu_utilization") {
      s.has_cpu = true;
      s.cpu_utilization = m.value;
    } else if (m.name == "nv_cpu_memory_used_bytes") {
      s.cpu_memory_used = m.value;
    } else if (m.name == "nv_cpu_memory_total_bytes") {
      s.cpu_memory_total = m.value;
    } else if (auto f = kModel.find(m.name); f != kModel.end() && ForModel(m, model, version)) {
      s.*(f->second) += m.value;
    }
  }
  return s;
}

ServerMetrics SummarizeScrapes(const std::vector<Scrape>& scrapes) {
  ServerMetrics r;
  r.scrapes = int(scrapes.size());
  if (scrapes.empty()) return r;
  const double n = double(scrapes.size());
  std::map<std::string, GpuSummary> gpus;
  for (const auto& s : scrapes) {
    for (const auto& [uuid, v] : s.gpu) {
      GpuSummary& g = gpus[uuid];
      g.uuid = uuid;
      g.utilization_avg += v[0] / n;
      g.power_avg_w += v[1] / n;
      g.memory_used_max = std::max(g.memory_used_max, v[2]);
      g.memory_total = std::max(g.memory_total, v[3]);
    }
    r.has_cpu = r.has_cpu || s.has_cpu;
    r.cpu_utilization_avg += s.cpu_utilization / n;
    r.cpu_memory_used_max = std::max(r.cpu_memory_used_max, s.cpu_memory_used);
    r.cpu_memory_total = std::max(r.cpu_memory_total, s.cpu_memory_total);
    r.pending_avg += s.pending / n;
  }
  for (auto& [uuid, g] : gpus) r.gpus.push_back(g);
  const Scrape &a = scrapes.front(), &b = scrapes.back();
  r.requests = b.success - a.success;
  r.inferences = b.inferences - a.inferences;
  r.executions = b.executions - a.executions;
  if (r.requests > 0) {
    r.request_us = (b.request_us - a.request_us) / r.requests;
    r.queue_us = (b.queue_us - a.queue_us) / r.requests;
    r.compute_infer_us = (b.compute_infer_us - a.compute_infer_us) / r.requests;
  }
  return r;
}

MetricsCollector::MetricsCollector(const std::string& url, int interval_ms, std::string model,
                                   std::string version)
    : model_(std::move(model)), version_(std::move(version)), interval_ms_(interval_ms) {
  std::string rest = url.rfind("http://", 0) == 0 ? url.substr(7) : url;
  const size_t slash = rest.find('/');
  path_ = slash == std::string::npos ? "/metrics" : rest.substr(slash);
  const std::string host = rest.substr(0, slash);
  display_url_ = "http://" + host + path_;
  http_ = std::make_unique<client::HttpClient>(host);
}

MetricsCollector::~MetricsCollector() { Stop(); }

bool MetricsCollector::ScrapeOnce(std::string* error) {
  std::lock_guard<std::mutex> lock(conn_mu_);
  client::HttpResponse r;
  client::ClientStatus st = http_->Get(path_, r);
  if (!st.ok || r.status != 200) {
    if (error) *error = st.ok ? "HTTP " + std::to_string(r.status) : st.message;
    return false;
  }
  scrapes_.push_back(ReadScrape(ParsePrometheus(r.body), model_, version_));
  return true;
}

bool MetricsCollector::Check(std::string& error) { return ScrapeOnce(&error); }

void MetricsCollector::Start() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms_),
                              [this] { return stop_; })) {
      lock.unlock();
      ScrapeOnce(nullptr);
      lock.lock();
    }
  });
}

void MetricsCollector::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetricsCollector::Mark() { ScrapeOnce(nullptr); }

ServerMetrics MetricsCollector::Since(MetricsClock::time_point since) {
  std::lock_guard<std::mutex> lock(conn_mu_);
  std::vector<Scrape> in;
  for (const auto& s : scrapes_) {
    if (s.at >= since) in.push_back(s);
  }
  return SummarizeScrapes(in);
}

}  // namespace inferd::perf
