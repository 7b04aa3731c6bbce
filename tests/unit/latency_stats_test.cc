// infer-perf's pure parts: window statistics, the Prometheus parser and
// summary of --collect-metrics, and the sequence bookkeeping.
#include "latency_stats.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "perf_metrics.h"
#include "perf_sequence.h"

namespace inferd::perf {
namespace {

TEST(LatencyStatsTest, NearestRankPercentiles) {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= 100; ++i) v.push_back(101 - i);  // unsorted on purpose
  WindowSummary s = Summarize(v, 2, 2.0, 4, 95);
  EXPECT_EQ(s.requests, 100u);
  EXPECT_EQ(s.errors, 2u);
  EXPECT_DOUBLE_EQ(s.throughput, 200.0);  // 100 requests x batch 4 / 2 s
  EXPECT_DOUBLE_EQ(s.p50_us, 50);
  EXPECT_DOUBLE_EQ(s.p99_us, 99);
  EXPECT_DOUBLE_EQ(s.pct_us, 95);
  EXPECT_DOUBLE_EQ(s.avg_us, 50.5);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
}

TEST(LatencyStatsTest, StabilityNeedsThreeAgreeingWindows) {
  auto w = [](double tput, double avg) {
    WindowSummary s;
    s.throughput = tput;
    s.avg_us = avg;
    s.pct_us = avg;
    return s;
  };
  std::vector<WindowSummary> ws = {w(100, 10), w(105, 10.5)};
  EXPECT_FALSE(IsStable(ws, 3, 0.1, false));
  ws.push_back(w(98, 10.2));
  EXPECT_TRUE(IsStable(ws, 3, 0.1, false));
  ws.push_back(w(150, 10));
  EXPECT_FALSE(IsStable(ws, 3, 0.1, false));
}

const char kExposition[] = R"(# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)
# TYPE nv_gpu_utilization gauge
nv_gpu_utilization{gpu_uuid="GPU-a"} 0.5
nv_gpu_utilization{gpu_uuid="GPU-b"} 0.25
nv_gpu_power_usage{gpu_uuid="GPU-a"} 100
nv_gpu_memory_used_bytes{gpu_uuid="GPU-a"} 2048
nv_gpu_memory_total_bytes{gpu_uuid="GPU-a"} 8192
nv_cpu_utilization 0.75
nv_cpu_memory_used_bytes 1000
nv_cpu_memory_total_bytes 4000
nv_inference_request_success{model="simple",version="1"} 10
nv_inference_request_success{model="simple",version="2"} 5
nv_inference_request_success{model="other",version="1"} 99
nv_inference_count{model="simple",version="1"} 20
nv_inference_queue_duration_us{model="simple",version="1"} 300
nv_inference_request_duration_us{model="simple",version="1"} 1500
odd{label="with \"quotes\", and a comma"} 3
not a sample line
)";

TEST(PerfMetricsTest, ParsesSamplesWithLabels) {
  const auto samples = ParsePrometheus(kExposition);
  ASSERT_EQ(samples.size(), 15u);  // comments and the malformed line skipped
  EXPECT_EQ(samples[0].name, "nv_gpu_utilization");
  EXPECT_EQ(samples[0].labels.at("gpu_uuid"), "GPU-a");
  EXPECT_DOUBLE_EQ(samples[0].value, 0.5);
  EXPECT_EQ(samples.back().labels.at("label"), "with \"quotes\", and a comma");
}

TEST(PerfMetricsTest, ReadsTheModelAndTheGpus) {
  const auto samples = ParsePrometheus(kExposition);
  Scrape all = ReadScrape(samples, "simple", "");
  EXPECT_DOUBLE_EQ(all.success, 15);  // both versions
  Scrape v1 = ReadScrape(samples, "simple", "1");
  EXPECT_DOUBLE_EQ(v1.success, 10);
  EXPECT_DOUBLE_EQ(v1.inferences, 20);
  ASSERT_EQ(v1.gpu.size(), 2u);
  EXPECT_DOUBLE_EQ(v1.gpu["GPU-a"][1], 100);
  EXPECT_TRUE(v1.has_cpu);
  EXPECT_DOUBLE_EQ(v1.cpu_utilization, 0.75);
}

TEST(PerfMetricsTest, SummaryAveragesGaugesAndDiffsCounters) {
  Scrape a, b;
  a.gpu["GPU-a"] = {0.2, 50, 1000, 8000};
  b.gpu["GPU-a"] = {0.6, 150, 3000, 8000};
  a.success = 10;
  b.success = 30;
  a.inferences = 10;
  b.inferences = 50;
  a.queue_us = 100;
  b.queue_us = 500;
  a.request_us = 1000;
  b.request_us = 3000;
  ServerMetrics m = SummarizeScrapes({a, b});
  EXPECT_EQ(m.scrapes, 2);
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(m.gpus[0].utilization_avg, 0.4);
  EXPECT_DOUBLE_EQ(m.gpus[0].power_avg_w, 100);
  EXPECT_DOUBLE_EQ(m.gpus[0].memory_used_max, 3000);
  EXPECT_DOUBLE_EQ(m.requests, 20);
  EXPECT_DOUBLE_EQ(m.inferences, 40);
  EXPECT_DOUBLE_EQ(m.queue_us, 20);     // 400 us over 20 requests
  EXPECT_DOUBLE_EQ(m.request_us, 100);  // 2000 us over 20 requests
  EXPECT_EQ(SummarizeScrapes({}).scrapes, 0);
}

TEST(PerfSequenceTest, LengthsFlagsAndIds) {
  Options o;
  o.sequence_length = 10;
  o.sequence_variation = 20;
  Sequences seq(o, 1);
  client::InferRequest r;
  std::set<int> lengths;
  for (int s = 0; s < 50; ++s) {
    int n = 0;
    seq.Next(0, r);
    EXPECT_TRUE(r.sequence_start);
    const uint64_t id = r.sequence_id;
    EXPECT_EQ(id, uint64_t(s + 1));  // unbounded ids count up from 1
    for (n = 1; !r.sequence_end; ++n) {
      seq.Done(0);
      seq.Next(0, r);
      EXPECT_FALSE(r.sequence_start);
      EXPECT_EQ(r.sequence_id, id);
    }
    seq.Done(0);
    EXPECT_GE(n, 8);
    EXPECT_LE(n, 12);
    lengths.insert(n);
  }
  EXPECT_GT(lengths.size(), 2u);  // the variation is used
  EXPECT_EQ(seq.started(), 50u);
}

TEST(PerfSequenceTest, BoundedIdsAreNeverSharedAndOpenOnesEnd) {
  Options o;
  o.sequence_length = 2;
  o.sequence_variation = 0;
  o.sequence_id_start = 5;
  o.sequence_id_end = 7;
  EXPECT_THROW(Sequences(o, 3), std::invalid_argument);
  Sequences seq(o, 2);
  client::InferRequest a, b;
  seq.Next(0, a);
  seq.Next(1, b);
  EXPECT_EQ(a.sequence_id, 5u);
  EXPECT_EQ(b.sequence_id, 6u);
  seq.Done(1);
  seq.Next(1, b);  // slot 1 ends 6 ...
  EXPECT_TRUE(b.sequence_end);
  seq.Done(1);
  seq.Next(1, b);  // ... and only then may reuse it; 5 is still open in slot 0
  EXPECT_EQ(b.sequence_id, 6u);
  EXPECT_EQ(seq.FreeSlot(), std::nullopt);  // both slots have a request in flight
  seq.Done(0);
  EXPECT_EQ(seq.FreeSlot(), std::optional<size_t>(0));
  seq.Done(1);
  const auto open = seq.TakeOpen();
  EXPECT_EQ(std::set<uint64_t>(open.begin(), open.end()), (std::set<uint64_t>{5, 6}));
  EXPECT_TRUE(seq.TakeOpen().empty());
}

}  // namespace
}  // namespace inferd::perf
