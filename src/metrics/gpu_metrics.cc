#include "metrics/gpu_metrics.h"

namespace inferd::metrics {

std::vector<MetricFamily> GpuFamilies(const std::vector<GpuSample>& gpus) {
  std::vector<MetricFamily> out;
  if (gpus.empty()) return out;
  auto family = [&](const char* name, const char* help, MetricType type, auto field) {
    MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type;
    for (const auto& g : gpus) {
      const auto& v = g.*field;
      if (v) f.samples.push_back(Sample{{{"gpu_uuid", g.uuid}}, static_cast<double>(*v)});
    }
    if (!f.samples.empty()) out.push_back(std::move(f));
  };
  family("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)", MetricType::kGauge,
         &GpuSample::utilization);
  family("nv_gpu_memory_total_bytes", "GPU total memory, in bytes", MetricType::kGauge,
         &GpuSample::memory_total_bytes);
  family("nv_gpu_memory_used_bytes", "GPU used memory, in bytes", MetricType::kGauge,
         &GpuSample::memory_used_bytes);
  family("nv_gpu_power_usage", "GPU power usage in watts", MetricType::kGauge,
         &GpuSample::power_usage_watts);
  family("nv_gpu_power_limit", "GPU power management limit in watts", MetricType::kGauge,
         &GpuSample::power_limit_watts);
  family("nv_energy_consumption", "GPU energy consumption in joules since the server started",
         MetricType::kCounter, &GpuSample::energy_joules);
  return out;
}

}  // namespace inferd::metrics
