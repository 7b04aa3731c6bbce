#include "metrics/residency_metrics.h"

namespace inferd::metrics {
namespace {

// One series per model of `counts`.
MetricFamily PerModel(std::string name, std::string help, MetricType type,
                      const std::map<std::string, uint64_t>& counts) {
  MetricFamily f = Family(std::move(name), std::move(help), type);
  for (const auto& [model, n] : counts) {
    f.samples.push_back(Sample{{{"model", model}}, static_cast<double>(n)});
  }
  return f;
}

}  // namespace

std::vector<MetricFamily> ResidencyFamilies(const ResidencySnapshot& r) {
  std::vector<MetricFamily> out;
  MetricFamily budget =
      Family("inferd_model_memory_budget_bytes",
             "The model memory budget (--model-memory-budget), bytes", MetricType::kGauge);
  budget.samples.push_back(Sample{{}, static_cast<double>(r.budget_bytes)});
  out.push_back(std::move(budget));
  MetricFamily resident = Family(
      "inferd_model_memory_resident_bytes",
      "Bytes the loaded models take (the sum of their measured footprints)", MetricType::kGauge);
  resident.samples.push_back(Sample{{}, static_cast<double>(r.resident_bytes)});
  out.push_back(std::move(resident));
  out.push_back(PerModel("inferd_model_memory_bytes",
                         "A loaded model's footprint measured at load, bytes", MetricType::kGauge,
                         r.model_bytes));
  out.push_back(PerModel("inferd_model_residency_loads_total",
                         "Loads of a model under the memory budget", MetricType::kCounter,
                         r.loads));
  out.push_back(PerModel("inferd_model_residency_evictions_total",
                         "Evictions of a model to make room under the memory budget",
                         MetricType::kCounter, r.evictions));
  out.push_back(PerModel("inferd_model_residency_refusals_total",
                         "Requests refused because their model could not be made resident",
                         MetricType::kCounter, r.refusals));
  MetricFamily wait = Family("inferd_model_cold_start_wait_seconds",
                             "How long requests for a model that was not loaded waited, seconds",
                             MetricType::kHistogram);
  wait.histograms.push_back(HistogramSample{{}, r.wait_bounds, r.wait_counts, r.wait_sum});
  out.push_back(std::move(wait));
  return out;
}

}  // namespace inferd::metrics
