#include "metrics/metrics_service.h"

#include <fstream>
#include <sstream>

#include "metrics/cache_metrics.h"
#include "metrics/layout_metrics.h"
#include "metrics/model_metrics.h"
#include "metrics/repository_metrics.h"
#include "metrics/residency_metrics.h"
#include "metrics/trace_metrics.h"

namespace inferd::metrics {
namespace {

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

MetricsService::MetricsService(const InferenceServer& server, MetricsOptions options)
    : server_(server), options_(std::move(options)) {}

MetricsService::~MetricsService() { Stop(); }

Status MetricsService::Start() {
  if (!options_.gpu_library.empty()) gpu_ = OpenNvml(options_.gpu_library);
  SampleOnce();
  http::HttpServerOptions ho;
  ho.address = options_.address;
  ho.port = options_.port;
  ho.threads = 1;
  ho.max_body_bytes = 64 << 10;
  http_ = std::make_unique<http::HttpServer>(
      ho, [this](const http::HttpRequest& r, const std::shared_ptr<http::HttpResponder>& s) {
        Handle(r, s);
      });
  Status s = http_->Start();
  if (!s.ok()) {
    http_.reset();
    return Unavailable("metrics: " + s.message());
  }
  sampler_ = std::thread([this] { SamplerLoop(); });
  return Status::Ok();
}

uint16_t MetricsService::port() const { return http_ ? http_->port() : 0; }

void MetricsService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (sampler_.joinable()) sampler_.join();
  if (http_) {
    http_->StopAccepting();
    http_->Stop();
  }
}

void MetricsService::SampleOnce() {
  SystemSample sample;
  if (auto text = ReadWholeFile(options_.proc_stat)) {
    if (auto cpu = ParseProcStat(*text)) {
      // The first reading has nothing to compare with: 0 until the next.
      sample.cpu_utilization = last_cpu_ ? CpuUtilization(*last_cpu_, *cpu) : 0.0;
      last_cpu_ = cpu;
    }
  }
  if (auto text = ReadWholeFile(options_.proc_meminfo)) sample.memory = ParseMemInfo(*text);
  std::vector<GpuSample> gpus;
  if (gpu_) gpus = gpu_->Sample();
  std::lock_guard<std::mutex> lock(mu_);
  system_ = sample;
  gpus_ = std::move(gpus);
}

void MetricsService::SamplerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms));
    if (stop_) break;
    lock.unlock();
    SampleOnce();
    lock.lock();
  }
}

std::string MetricsService::Render() const {
  std::vector<ModelStatistics> versions;
  if (auto stats = server_.GetStatistics("", -1); stats.ok()) versions = std::move(*stats);
  std::vector<MetricFamily> families = ModelFamilies(versions, server_.ModelLoadFailures());
  for (auto& f : RepositoryFamilies(server_.RepositoryFetches())) families.push_back(std::move(f));
  for (auto& f : LayoutFamilies(versions)) families.push_back(std::move(f));
  const trace::Tracer& tracer = server_.tracer();
  for (auto& f : TraceFamilies(tracer.sampled(), tracer.collector_stats())) {
    families.push_back(std::move(f));
  }
  if (const ResponseCache* cache = server_.response_cache()) {
    for (auto& f : CacheFamilies(cache->Stats())) families.push_back(std::move(f));
  }
  if (auto residency = server_.Residency()) {
    for (auto& f : ResidencyFamilies(*residency)) families.push_back(std::move(f));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& f : SystemFamilies(system_)) families.push_back(std::move(f));
    for (auto& f : GpuFamilies(gpus_)) families.push_back(std::move(f));
  }
  std::string out;
  out.reserve(16 << 10);
  WriteText(families, out);
  return out;
}

void MetricsService::Handle(const http::HttpRequest& request,
                            const std::shared_ptr<http::HttpResponder>& responder) const {
  if (request.path != "/metrics" && request.path != "/metrics/") {
    responder->Send(http::ErrorResponse(404, "Not Found"));
    return;
  }
  if (request.method != "GET") {
    http::HttpResponse r = http::ErrorResponse(405, "Method Not Allowed");
    r.headers.emplace_back("Allow", "GET");
    responder->Send(std::move(r));
    return;
  }
  http::HttpResponse r;
  r.status = 200;
  r.content_type = kTextContentType;
  r.body = Render();
  responder->Send(std::move(r));
}

}  // namespace inferd::metrics
