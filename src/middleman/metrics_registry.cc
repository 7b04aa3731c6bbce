#include "middleman/metrics_registry.h"

#include <algorithm>

namespace inferd::middleman {

void Histogram::Observe(double v) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  counts_[i]++;
  sum_ += v;
}

metrics::HistogramSample Histogram::Snapshot(metrics::Labels labels) const {
  metrics::HistogramSample s;
  s.labels = std::move(labels);
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  s.counts = counts_;
  s.sum = sum_;
  return s;
}

std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 metrics::MetricType type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.help = help;
    it->second.type = type;
    order_.push_back(name);
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help,
                                  metrics::Labels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = family(name, help, metrics::MetricType::kCounter).values[std::move(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help,
                              metrics::Labels labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = family(name, help, metrics::MetricType::kGauge).values[std::move(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Histogram& MetricsRegistry::histogram(const std::string& name, const std::string& help,
                                      metrics::Labels labels, const std::vector<double>& bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = family(name, help, metrics::MetricType::kHistogram).histograms[std::move(labels)];
  if (!slot) slot = std::make_unique<Histogram>(bounds);
  return *slot;
}

void MetricsRegistry::AddRenderHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  hooks_.push_back(std::move(hook));
}

std::string MetricsRegistry::RenderText() const {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    hooks = hooks_;
  }
  for (const auto& hook : hooks) hook();
  std::vector<metrics::MetricFamily> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : order_) {
      const Family& f = families_.at(name);
      metrics::MetricFamily m;
      m.name = name;
      m.help = f.help;
      m.type = f.type;
      for (const auto& [labels, v] : f.values) m.samples.push_back({labels, v->value()});
      for (const auto& [labels, h] : f.histograms) m.histograms.push_back(h->Snapshot(labels));
      out.push_back(std::move(m));
    }
  }
  std::string text;
  metrics::WriteText(out, text);
  return text;
}

}  // namespace inferd::middleman
