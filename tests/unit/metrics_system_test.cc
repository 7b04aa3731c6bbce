#include <gtest/gtest.h>

#include "metrics/gpu_metrics.h"
#include "metrics/system_metrics.h"

namespace inferd::metrics {
namespace {

constexpr char kProcStat[] =
    "cpu  4705 356 584 3699 23 0 23 7 11 13\n"
    "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4 [... lots more numbers ...]\n"
    "ctxt 1990473\n";

TEST(MetricsSystemTest, ParsesAggregateCpuLine) {
  auto t = ParseProcStat(kProcStat);
  ASSERT_TRUE(t.has_value());
  // busy = user + nice + system + irq + softirq + steal; guest is inside user.
  EXPECT_EQ(t->busy, 4705u + 356 + 584 + 0 + 23 + 7);
  EXPECT_EQ(t->idle, 3699u + 23);
}

TEST(MetricsSystemTest, ParsesShortOldKernelCpuLine) {
  auto t = ParseProcStat("cpu 10 0 5 85\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->busy, 15u);
  EXPECT_EQ(t->idle, 85u);
}

TEST(MetricsSystemTest, RejectsBadProcStat) {
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4 5\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu 1 2 x 4 5\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu 1 2\n").has_value());
}

TEST(MetricsSystemTest, CpuUtilizationOverAnInterval) {
  EXPECT_DOUBLE_EQ(CpuUtilization({100, 300}, {130, 370}), 0.3);
  EXPECT_DOUBLE_EQ(CpuUtilization({100, 300}, {100, 300}), 0.0);  // no time passed
  EXPECT_DOUBLE_EQ(CpuUtilization({100, 300}, {90, 310}), 0.0);   // counters went back
  EXPECT_DOUBLE_EQ(CpuUtilization({0, 0}, {50, 0}), 1.0);
}

TEST(MetricsSystemTest, ParsesMemInfoWithMemAvailable) {
  auto m = ParseMemInfo(
      "MemTotal:       16318392 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:    8000000 kB\n"
      "Buffers:          200000 kB\n"
      "Cached:          3000000 kB\n"
      "HugePages_Total:       0\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->total_bytes, 16318392ull * 1024);
  EXPECT_EQ(m->used_bytes, (16318392ull - 8000000) * 1024);
}

TEST(MetricsSystemTest, ParsesMemInfoWithoutMemAvailable) {
  auto m = ParseMemInfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->total_bytes, 1000u * 1024);
  EXPECT_EQ(m->used_bytes, 600u * 1024);
  EXPECT_FALSE(ParseMemInfo("MemFree: 100 kB\n").has_value());
  EXPECT_FALSE(ParseMemInfo("").has_value());
}

TEST(MetricsSystemTest, ParsesThisMachinesProcFiles) {
  // Whatever the host, the real files parse.
  std::string stat, meminfo;
  {
    FILE* f = fopen("/proc/stat", "r");
    if (f == nullptr) GTEST_SKIP() << "no /proc/stat";
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) stat.append(buf, n);
    fclose(f);
    f = fopen("/proc/meminfo", "r");
    ASSERT_NE(f, nullptr);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) meminfo.append(buf, n);
    fclose(f);
  }
  EXPECT_TRUE(ParseProcStat(stat).has_value());
  auto m = ParseMemInfo(meminfo);
  ASSERT_TRUE(m.has_value());
  EXPECT_GT(m->total_bytes, 0u);
  EXPECT_LE(m->used_bytes, m->total_bytes);
}

TEST(MetricsSystemTest, SystemFamilies) {
  SystemSample s;
  EXPECT_TRUE(SystemFamilies(s).empty());
  s.cpu_utilization = 0.5;
  s.memory = MemoryInfo{2048, 1024};
  auto f = SystemFamilies(s);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].name, "nv_cpu_utilization");
  EXPECT_EQ(f[0].type, MetricType::kGauge);
  EXPECT_TRUE(f[0].samples[0].labels.empty());
  EXPECT_EQ(f[0].samples[0].value, 0.5);
  EXPECT_EQ(f[1].name, "nv_cpu_memory_total_bytes");
  EXPECT_EQ(f[1].samples[0].value, 2048);
  EXPECT_EQ(f[2].name, "nv_cpu_memory_used_bytes");
  EXPECT_EQ(f[2].samples[0].value, 1024);
}

TEST(MetricsGpuTest, AbsentNvmlMeansNoSourceAndNoFamilies) {
  std::string why;
  auto source = OpenNvml("libnvidia-ml-does-not-exist.so.1", &why);
  EXPECT_EQ(source, nullptr);
  EXPECT_NE(why.find("cannot load"), std::string::npos) << why;
  EXPECT_TRUE(GpuFamilies({}).empty());
}

// The NVML source over a fake libnvidia-ml (tests/fakes/fake_nvml.c): GPU 0
// answers everything, GPU 1 has no power or energy readings.
TEST(MetricsGpuTest, NvmlSourceReadsEveryGpuThroughDlopen) {
  std::string why;
  auto source = OpenNvml(INFERD_FAKE_NVML, &why);
  ASSERT_NE(source, nullptr) << why;
  auto gpus = source->Sample();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].uuid, "GPU-fake-0");
  EXPECT_DOUBLE_EQ(*gpus[0].utilization, 0.42);
  EXPECT_EQ(*gpus[0].memory_total_bytes, 150754820096ull);
  EXPECT_EQ(*gpus[0].memory_used_bytes, 1073741824ull);
  EXPECT_DOUBLE_EQ(*gpus[0].power_usage_watts, 123.456);
  EXPECT_DOUBLE_EQ(*gpus[0].power_limit_watts, 700);
  // Energy counts from when the source was opened (+1.5 J per fake read).
  EXPECT_DOUBLE_EQ(*gpus[0].energy_joules, 1.5);
  EXPECT_DOUBLE_EQ(*source->Sample()[0].energy_joules, 3.0);
  EXPECT_EQ(gpus[1].uuid, "GPU-fake-1");
  EXPECT_DOUBLE_EQ(*gpus[1].utilization, 0.07);
  EXPECT_FALSE(gpus[1].power_usage_watts.has_value());
  EXPECT_FALSE(gpus[1].power_limit_watts.has_value());
  EXPECT_FALSE(gpus[1].energy_joules.has_value());

  std::string text;
  WriteText(GpuFamilies(gpus), text);
  EXPECT_NE(text.find("nv_gpu_utilization{gpu_uuid=\"GPU-fake-0\"} 0.42\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("nv_gpu_utilization{gpu_uuid=\"GPU-fake-1\"} 0.07\n"), std::string::npos);
  EXPECT_NE(text.find("nv_gpu_power_usage{gpu_uuid=\"GPU-fake-0\"} 123.456\n"), std::string::npos);
  EXPECT_EQ(text.find("nv_gpu_power_usage{gpu_uuid=\"GPU-fake-1\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE nv_energy_consumption counter\n"), std::string::npos);
  EXPECT_NE(text.find("nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-fake-1\"} 150754820096\n"),
            std::string::npos)
      << text;
}

TEST(MetricsGpuTest, GpuFamiliesLabelledByUuidAndSkipUnsupportedQueries) {
  GpuSample a;
  a.uuid = "GPU-aaaa";
  a.utilization = 0.75;
  a.memory_total_bytes = 80ull << 30;
  a.memory_used_bytes = 1ull << 30;
  a.power_usage_watts = 120.5;
  a.power_limit_watts = 700;
  a.energy_joules = 42;
  GpuSample b;
  b.uuid = "GPU-bbbb";
  b.memory_total_bytes = 16ull << 30;  // nothing else supported
  auto fams = GpuFamilies({a, b});
  ASSERT_EQ(fams.size(), 6u);
  std::string text;
  WriteText(fams, text);
  EXPECT_NE(text.find("# TYPE nv_energy_consumption counter\n"
                      "nv_energy_consumption{gpu_uuid=\"GPU-aaaa\"} 42\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nv_gpu_utilization{gpu_uuid=\"GPU-aaaa\"} 0.75\n"), std::string::npos);
  EXPECT_NE(text.find("nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-bbbb\"} 17179869184\n"),
            std::string::npos);
  EXPECT_EQ(text.find("nv_gpu_utilization{gpu_uuid=\"GPU-bbbb\"}"), std::string::npos);
  EXPECT_NE(text.find("nv_gpu_power_usage{gpu_uuid=\"GPU-aaaa\"} 120.5\n"), std::string::npos);
  EXPECT_NE(text.find("nv_gpu_power_limit{gpu_uuid=\"GPU-aaaa\"} 700\n"), std::string::npos);
}

}  // namespace
}  // namespace inferd::metrics
