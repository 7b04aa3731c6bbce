// GPU metrics (nv_gpu_*, nv_energy_consumption), read through NVML loaded
// at run time: inferd neither links nor needs the NVIDIA driver, and on a
// machine without one there are no GPU families at all.
//
// Threading: a GpuMetricsSource is used by one thread at a time (the metrics
// sampler). GpuFamilies is a pure function.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace inferd::metrics {

// One GPU's reading; a query the device does not support stays empty and
// its series is left out.
struct GpuSample {
  std::string uuid;                   // e.g. "GPU-5fb4f9f1-..."
  std::optional<double> utilization;  // 0..1
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<double> power_usage_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> energy_joules;  // since the source was opened
};

class GpuMetricsSource {
 public:
  virtual ~GpuMetricsSource() = default;
  // Reads every GPU now; may take a few milliseconds.
  virtual std::vector<GpuSample> Sample() = 0;
};

// Opens NVML with dlopen(`library`) and initialises it. Returns nullptr, and
// says why in `*why` when given, if the library is absent, does not export
// what is needed, fails to initialise, or sees no GPU.
std::unique_ptr<GpuMetricsSource> OpenNvml(const std::string& library = "libnvidia-ml.so.1",
                                           std::string* why = nullptr);

// nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes,
// nv_gpu_power_usage, nv_gpu_power_limit (gauges) and nv_energy_consumption
// (counter), each labelled gpu_uuid. No GPUs: no families.
std::vector<MetricFamily> GpuFamilies(const std::vector<GpuSample>& gpus);

}  // namespace inferd::metrics
