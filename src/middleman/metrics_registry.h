// MetricsRegistry: counters, gauges and histograms of a microservice,
// rendered in the Prometheus text format (metrics/exposition.h) for its
// /metrics endpoint.
//
// Ownership: the registry owns every series; the references it hands out
// stay valid for the registry's lifetime, so callers look a series up once
// and keep it. Threading: lookups take a mutex; updates of a series are
// lock-free atomics (histograms take a short per-series lock). Names and
// label keys must be valid Prometheus names (the caller's constants).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace inferd::middleman {

class Counter {
 public:
  void Add(double v = 1) {
    double cur = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
  }
  // For a series that mirrors a count kept elsewhere (read at each scrape).
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// A gauge is a counter that may go down.
using Gauge = Counter;

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void Observe(double v);
  metrics::HistogramSample Snapshot(metrics::Labels labels) const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
};

// Latency buckets in seconds, 100 us to 10 s.
std::vector<double> LatencyBuckets();

class MetricsRegistry {
 public:
  // The series of family `name` with `labels`; created on first use. A
  // family keeps the type and help of its first lookup.
  Counter& counter(const std::string& name, const std::string& help, metrics::Labels labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, metrics::Labels labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       metrics::Labels labels = {},
                       const std::vector<double>& bounds = LatencyBuckets());

  // `hook` runs at the start of every RenderText (before any series is
  // read), to refresh series that mirror state kept elsewhere; it may look
  // series up and set them. Hooks are kept for the registry's life.
  void AddRenderHook(std::function<void()> hook);

  // Every family, in the order of their first lookup.
  std::string RenderText() const;

 private:
  struct Family {
    std::string help;
    metrics::MetricType type;
    std::map<metrics::Labels, std::unique_ptr<Counter>> values;
    std::map<metrics::Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, metrics::MetricType type);

  mutable std::mutex hooks_mu_;  // never held with mu_
  std::vector<std::function<void()>> hooks_;
  mutable std::mutex mu_;
  std::vector<std::string> order_;
  std::map<std::string, Family> families_;
};

}  // namespace inferd::middleman
