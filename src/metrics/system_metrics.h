// Host metrics: CPU utilisation from /proc/stat and RAM from /proc/meminfo
// (Linux), as Triton reports them (nv_cpu_*). The parsers take the files'
// text so tests feed them samples; reading the files is the caller's job.
//
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "metrics/exposition.h"

namespace inferd::metrics {

// Aggregate CPU time from the first `cpu ` line of /proc/stat, in ticks:
// busy = user + nice + system + irq + softirq + steal (guest time is already
// part of user and nice), idle = idle + iowait.
struct CpuTimes {
  uint64_t busy = 0;
  uint64_t idle = 0;
};
std::optional<CpuTimes> ParseProcStat(std::string_view text);

// Utilisation between two readings, 0..1; 0 when no time passed or the
// counters went backwards.
double CpuUtilization(const CpuTimes& before, const CpuTimes& after);

// From /proc/meminfo (kB there, bytes here): used = MemTotal - MemAvailable,
// or MemTotal - (MemFree + Buffers + Cached) on kernels without
// MemAvailable.
struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;
};
std::optional<MemoryInfo> ParseMemInfo(std::string_view text);

// What the sampler last read; a missing part yields no family.
struct SystemSample {
  std::optional<double> cpu_utilization;
  std::optional<MemoryInfo> memory;
};

// nv_cpu_utilization, nv_cpu_memory_total_bytes, nv_cpu_memory_used_bytes
// (gauges without labels).
std::vector<MetricFamily> SystemFamilies(const SystemSample& sample);

}  // namespace inferd::metrics
