#include "metrics/layout_metrics.h"

#include <string>

namespace inferd::metrics {

std::vector<MetricFamily> LayoutFamilies(const std::vector<ModelStatistics>& versions) {
  MetricFamily active =
      Family("inferd_instance_layout_active_instances",
             "Instances taking executions under the automatic instance layout", MetricType::kGauge);
  MetricFamily threads = Family("inferd_instance_layout_threads_per_instance",
                                "CPU threads each execution gets under the automatic instance "
                                "layout",
                                MetricType::kGauge);
  for (const auto& v : versions) {
    if (!v.layout) continue;
    Labels labels{{"model", v.name}, {"version", std::to_string(v.version)}};
    active.samples.push_back(Sample{labels, static_cast<double>(v.layout->active)});
    threads.samples.push_back(Sample{std::move(labels), static_cast<double>(v.layout->threads)});
  }
  std::vector<MetricFamily> out;
  out.push_back(std::move(active));
  out.push_back(std::move(threads));
  return out;
}

}  // namespace inferd::metrics
