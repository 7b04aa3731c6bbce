#include "metrics/model_metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace inferd::metrics {
namespace {

// Whole microseconds, truncated (as Triton reports these counters).
double Us(uint64_t ns) {
  const uint64_t us = ns / 1000;
  return static_cast<double>(us);
}

// The per-model families, in exposition order.
struct ModelFamilySet {
  MetricFamily success, failure, count, exec, pending, load, request_us, queue_us, input_us,
      infer_us, output_us, request_hist, queue_hist, infer_hist, batch_hist, failures;
  // Adaptive batching's chosen size, only for versions that batch adaptively.
  MetricFamily batch_target;
  // Response cache, only for versions that cache (PROTOCOL-NEXT §8.1).
  MetricFamily cache_hits, cache_misses, cache_hit_us, cache_miss_us;
};

ModelFamilySet EmptyModelFamilies() {
  ModelFamilySet f;
  f.success =
      Family("nv_inference_request_success",
             "Number of successful inference requests, all batch sizes", MetricType::kCounter);
  f.failure = Family("nv_inference_request_failure",
                     "Number of failed inference requests, all batch sizes", MetricType::kCounter);
  f.count = Family("nv_inference_count", "Number of inferences performed, batch-weighted",
                   MetricType::kCounter);
  f.exec = Family("nv_inference_exec_count", "Number of model executions performed",
                  MetricType::kCounter);
  f.pending = Family("nv_inference_pending_request_count",
                     "Instantaneous number of pending requests awaiting execution per-model",
                     MetricType::kGauge);
  f.load = Family("nv_model_load_duration_secs", "Model load time in seconds", MetricType::kGauge);
  f.request_us =
      Family("nv_inference_request_duration_us",
             "Cumulative inference request duration in microseconds", MetricType::kCounter);
  f.queue_us =
      Family("nv_inference_queue_duration_us",
             "Cumulative inference queuing duration in microseconds", MetricType::kCounter);
  f.input_us = Family("nv_inference_compute_input_duration_us",
                      "Cumulative compute input duration in microseconds", MetricType::kCounter);
  f.infer_us =
      Family("nv_inference_compute_infer_duration_us",
             "Cumulative compute inference duration in microseconds", MetricType::kCounter);
  f.output_us =
      Family("nv_inference_compute_output_duration_us",
             "Cumulative inference compute output duration in microseconds", MetricType::kCounter);
  f.request_hist = Family("inferd_request_duration_seconds",
                          "End-to-end duration of successful inference requests, seconds",
                          MetricType::kHistogram);
  f.queue_hist =
      Family("inferd_queue_duration_seconds",
             "Queue duration of successful inference requests, seconds", MetricType::kHistogram);
  f.infer_hist = Family("inferd_compute_infer_duration_seconds",
                        "Model execution duration, once per execution (batch), seconds",
                        MetricType::kHistogram);
  f.batch_hist =
      Family("inferd_batch_size", "Rows (batch size) per model execution", MetricType::kHistogram);
  f.batch_target =
      Family("inferd_batch_target_size", "Batch size adaptive batching currently aims for (rows)",
             MetricType::kGauge);
  f.failures = Family("inferd_model_load_failures_total",
                      "Number of failed attempts to load a model", MetricType::kCounter);
  f.cache_hits = Family("nv_cache_num_hits_per_model",
                        "Number of requests answered from the response cache, per model",
                        MetricType::kCounter);
  f.cache_misses = Family("nv_cache_num_misses_per_model",
                          "Number of response cache lookups that found nothing, per model",
                          MetricType::kCounter);
  f.cache_hit_us = Family("nv_cache_hit_duration_per_model",
                          "Cumulative time of cache hits (lookup and copy) in microseconds",
                          MetricType::kCounter);
  f.cache_miss_us = Family("nv_cache_miss_duration_per_model",
                           "Cumulative time of cache misses (lookup and insert) in microseconds",
                           MetricType::kCounter);
  return f;
}

// The samples of one ready version.
void AddVersion(const ModelStatistics& v, ModelFamilySet& f) {
  const Labels labels = {{"model", v.name}, {"version", std::to_string(v.version)}};
  const ModelStatsSnapshot& s = v.stats;
  auto add = [&](MetricFamily& family, double value) {
    family.samples.push_back(Sample{labels, value});
  };
  add(f.success, static_cast<double>(s.success.count));
  const std::pair<const char*, uint64_t> reasons[] = {{"REJECTED", s.fail_rejected},
                                                      {"CANCELED", s.fail_cancelled},
                                                      {"BACKEND", s.fail_backend},
                                                      {"OTHER", s.fail_other}};
  for (const auto& [reason, n] : reasons) {
    Labels l = labels;
    l.emplace_back("reason", reason);
    f.failure.samples.push_back(Sample{std::move(l), static_cast<double>(n)});
  }
  add(f.count, static_cast<double>(s.inference_count));
  add(f.exec, static_cast<double>(s.execution_count));
  add(f.pending, static_cast<double>(std::max<int64_t>(0, s.pending)));
  add(f.load, v.load_seconds);
  add(f.request_us, Us(s.success.ns));
  add(f.queue_us, Us(s.queue.ns));
  add(f.input_us, Us(s.compute_input.ns));
  add(f.infer_us, Us(s.compute_infer.ns));
  add(f.output_us, Us(s.compute_output.ns));
  if (s.response_cache) {
    add(f.cache_hits, static_cast<double>(s.cache_hit.count));
    add(f.cache_misses, static_cast<double>(s.cache_miss.count));
    add(f.cache_hit_us, Us(s.cache_hit.ns));
    add(f.cache_miss_us, Us(s.cache_miss.ns));
  }
  auto hist = [&](MetricFamily& family, const HistogramSnapshot& h, double per_unit) {
    if (!h.counts.empty()) family.histograms.push_back(ToHistogramSample(h, per_unit, labels));
  };
  hist(f.request_hist, s.request_hist, 1e9);
  hist(f.queue_hist, s.queue_hist, 1e9);
  hist(f.infer_hist, s.compute_infer_hist, 1e9);
  hist(f.batch_hist, s.batch_size_hist, 1);
  if (s.batch_target > 0) add(f.batch_target, static_cast<double>(s.batch_target));
}

// One sample per model in `versions` or `load_failures` (0 when it never
// failed to load).
void AddLoadFailures(const std::vector<ModelStatistics>& versions,
                     const std::map<std::string, uint64_t>& load_failures, MetricFamily& failures) {
  std::set<std::string> models;
  for (const auto& v : versions) models.insert(v.name);
  for (const auto& [name, n] : load_failures) models.insert(name);
  for (const auto& name : models) {
    auto it = load_failures.find(name);
    const double n = it == load_failures.end() ? 0 : static_cast<double>(it->second);
    failures.samples.push_back(Sample{{{"model", name}}, n});
  }
}

}  // namespace

HistogramSample ToHistogramSample(const HistogramSnapshot& h, double per_unit, Labels labels) {
  HistogramSample s;
  s.labels = std::move(labels);
  for (uint64_t b : h.bounds) s.bounds.push_back(static_cast<double>(b) / per_unit);
  s.counts = h.counts;
  s.sum = static_cast<double>(h.sum) / per_unit;
  return s;
}

std::vector<MetricFamily> ModelFamilies(const std::vector<ModelStatistics>& versions,
                                        const std::map<std::string, uint64_t>& load_failures) {
  ModelFamilySet f = EmptyModelFamilies();
  for (const auto& v : versions) AddVersion(v, f);
  AddLoadFailures(versions, load_failures, f.failures);
  std::vector<MetricFamily> out;
  for (MetricFamily* m :
       {&f.success,      &f.failure,      &f.count,      &f.exec,         &f.pending,
        &f.load,         &f.request_us,   &f.queue_us,   &f.input_us,     &f.infer_us,
        &f.output_us,    &f.request_hist, &f.queue_hist, &f.infer_hist,   &f.batch_hist,
        &f.batch_target, &f.failures,     &f.cache_hits, &f.cache_misses, &f.cache_hit_us,
        &f.cache_miss_us}) {
    out.push_back(std::move(*m));
  }
  return out;
}

StatusOr<std::vector<double>> ParseLatencyBuckets(std::string_view flag, std::string_view text) {
  const std::string what = "--" + std::string(flag);
  std::vector<double> out;
  int64_t previous_ns = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    double v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() ||
        !std::isfinite(v)) {
      return InvalidArgument(what + " expects comma-separated seconds, got '" + std::string(text) +
                             "'");
    }
    if (v < 1e-9 || v > 1e6) {
      return InvalidArgument(what + ": bucket " + std::string(item) +
                             " is outside 1e-9 .. 1e6 seconds");
    }
    const int64_t ns = std::llround(v * 1e9);
    if (ns <= previous_ns) {
      return InvalidArgument(what + ": buckets must be strictly ascending, got '" +
                             std::string(text) + "'");
    }
    previous_ns = ns;
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

}  // namespace inferd::metrics
