#include "metrics/system_metrics.h"

#include <charconv>
#include <map>
#include <string>

namespace inferd::metrics {
namespace {

std::string_view NextLine(std::string_view& text) {
  const size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  return line;
}

// Splits on spaces and tabs, skipping empty fields.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<uint64_t> ToU64(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

MetricFamily Gauge(std::string name, std::string help, double value) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = MetricType::kGauge;
  f.samples.push_back(Sample{{}, value});
  return f;
}

}  // namespace

std::optional<CpuTimes> ParseProcStat(std::string_view text) {
  while (!text.empty()) {
    auto fields = Fields(NextLine(text));
    if (fields.empty() || fields[0] != "cpu") continue;
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]
    if (fields.size() < 5) return std::nullopt;
    uint64_t v[8] = {};
    for (size_t i = 1; i < fields.size() && i <= 8; ++i) {
      auto n = ToU64(fields[i]);
      if (!n) return std::nullopt;
      v[i - 1] = *n;
    }
    CpuTimes t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.idle = v[3] + v[4];
    return t;
  }
  return std::nullopt;
}

double CpuUtilization(const CpuTimes& before, const CpuTimes& after) {
  if (after.busy < before.busy || after.idle < before.idle) return 0;
  const uint64_t busy = after.busy - before.busy;
  const uint64_t total = busy + (after.idle - before.idle);
  return total == 0 ? 0 : static_cast<double>(busy) / static_cast<double>(total);
}

std::optional<MemoryInfo> ParseMemInfo(std::string_view text) {
  std::map<std::string_view, uint64_t> kb;
  while (!text.empty()) {
    auto fields = Fields(NextLine(text));
    // "MemTotal:       16318392 kB"
    if (fields.size() < 2 || fields[0].size() < 2 || fields[0].back() != ':') continue;
    auto n = ToU64(fields[1]);
    if (!n) continue;
    fields[0].remove_suffix(1);
    kb[fields[0]] = *n;
  }
  auto get = [&](std::string_view k) -> std::optional<uint64_t> {
    auto it = kb.find(k);
    if (it == kb.end()) return std::nullopt;
    return it->second;
  };
  auto total = get("MemTotal");
  if (!total) return std::nullopt;
  uint64_t available = 0;
  if (auto a = get("MemAvailable")) {
    available = *a;
  } else {
    available = get("MemFree").value_or(0) + get("Buffers").value_or(0) + get("Cached").value_or(0);
  }
  MemoryInfo m;
  m.total_bytes = *total * 1024;
  m.used_bytes = (*total > available ? *total - available : 0) * 1024;
  return m;
}

std::vector<MetricFamily> SystemFamilies(const SystemSample& sample) {
  std::vector<MetricFamily> out;
  if (sample.cpu_utilization) {
    out.push_back(
        Gauge("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", *sample.cpu_utilization));
  }
  if (sample.memory) {
    out.push_back(Gauge("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes",
                        static_cast<double>(sample.memory->total_bytes)));
    out.push_back(Gauge("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes",
                        static_cast<double>(sample.memory->used_bytes)));
  }
  return out;
}

}  // namespace inferd::metrics
