#include <gtest/gtest.h>

#include <thread>

#include "metrics/model_metrics.h"
#include "scheduler/model_stats.h"
#include "server/command_line.h"

namespace inferd::metrics {
namespace {

const MetricFamily* Find(const std::vector<MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Text(const std::vector<MetricFamily>& fams) {
  std::string out;
  WriteText(fams, out);
  return out;
}

TEST(MetricsHistogramTest, BucketsAreUpperBoundInclusive) {
  AtomicHistogram h;
  h.Observe(5);  // not configured: ignored
  EXPECT_TRUE(h.Get().counts.empty());
  h.Configure({10, 20});
  for (uint64_t v : {0, 10, 11, 20, 21, 1000}) h.Observe(v);
  auto s = h.Get();
  EXPECT_EQ(s.bounds, (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{2, 2, 2}));
  EXPECT_EQ(s.sum, 0u + 10 + 11 + 20 + 21 + 1000);
  EXPECT_EQ(s.Count(), 6u);
}

TEST(MetricsHistogramTest, ConcurrentObservationsAreAllCounted) {
  AtomicHistogram h;
  h.Configure({1, 100});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Observe(static_cast<uint64_t>(i % 200));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.Get().Count(), 40000u);
}

TEST(MetricsHistogramTest, ModelStatsFeedsHistogramsOnTheRecordPath) {
  ModelStats stats;
  StatsHistogramOptions options;
  options.latency_buckets_s = {0.001, 0.01};
  stats.ConfigureHistograms(options, /*max_batch_size=*/6);
  stats.RecordSuccess(/*request_ns=*/2'000'000, /*queue_ns=*/500'000);
  stats.RecordSuccess(20'000'000, 1'000'000);
  stats.RecordExecution(/*batch_size=*/3, 1, 9'000'000, 1);
  stats.RecordExecution(8, 1, 1, 1);
  stats.RecordFailure(FailReason::kBackend, 5);  // failures are not in the histograms
  auto s = stats.Snapshot();
  EXPECT_EQ(s.request_hist.bounds, (std::vector<uint64_t>{1'000'000, 10'000'000}));
  EXPECT_EQ(s.request_hist.counts, (std::vector<uint64_t>{0, 1, 1}));
  EXPECT_EQ(s.queue_hist.counts, (std::vector<uint64_t>{2, 0, 0}));
  EXPECT_EQ(s.compute_infer_hist.counts, (std::vector<uint64_t>{1, 1, 0}));
  // 1, 2, 4, 8: up to the first power of two >= max_batch_size.
  EXPECT_EQ(s.batch_size_hist.bounds, (std::vector<uint64_t>{1, 2, 4, 8}));
  EXPECT_EQ(s.batch_size_hist.counts, (std::vector<uint64_t>{0, 0, 1, 1, 0}));
  EXPECT_EQ(s.batch_size_hist.sum, 11u);
}

TEST(MetricsHistogramTest, UnbatchedModelHasOneBatchBucket) {
  ModelStats stats;
  stats.ConfigureHistograms(StatsHistogramOptions(), 0);
  EXPECT_EQ(stats.Snapshot().batch_size_hist.bounds, (std::vector<uint64_t>{1}));
  EXPECT_EQ(stats.Snapshot().request_hist.bounds.size(),
            StatsHistogramOptions::DefaultLatencyBuckets().size());
}

ModelStatistics Version(const std::string& name, int64_t version) {
  ModelStats stats;
  StatsHistogramOptions options;
  options.latency_buckets_s = {0.00005, 0.5};
  stats.ConfigureHistograms(options, 4);
  stats.RecordSuccess(1'500'999, 250'000);
  stats.RecordSuccess(1'000'000, 250'000);
  stats.RecordExecution(2, 10'000, 2'000'000, 3'000);
  stats.RecordFailure(FailReason::kRejected, 1);
  stats.RecordFailure(FailReason::kCancelled, 1);
  stats.RecordFailure(FailReason::kCancelled, 1);
  stats.AddPending(3);
  return ModelStatistics{name, version, stats.Snapshot(), 0.25};
}

TEST(MetricsModelTest, TritonFamiliesWithModelAndVersionLabels) {
  auto fams = ModelFamilies({Version("simple", 1)}, {});
  const std::string text = Text(fams);
  const char* expected[] = {
      "# TYPE nv_inference_request_success counter\n"
      "nv_inference_request_success{model=\"simple\",version=\"1\"} 2\n",
      "# TYPE nv_inference_request_failure counter\n"
      "nv_inference_request_failure{model=\"simple\",reason=\"REJECTED\",version=\"1\"} 1\n"
      "nv_inference_request_failure{model=\"simple\",reason=\"CANCELED\",version=\"1\"} 2\n"
      "nv_inference_request_failure{model=\"simple\",reason=\"BACKEND\",version=\"1\"} 0\n"
      "nv_inference_request_failure{model=\"simple\",reason=\"OTHER\",version=\"1\"} 0\n",
      "nv_inference_count{model=\"simple\",version=\"1\"} 2\n",
      "nv_inference_exec_count{model=\"simple\",version=\"1\"} 1\n",
      "# TYPE nv_inference_pending_request_count gauge\n"
      "nv_inference_pending_request_count{model=\"simple\",version=\"1\"} 3\n",
      "# TYPE nv_model_load_duration_secs gauge\n"
      "nv_model_load_duration_secs{model=\"simple\",version=\"1\"} 0.25\n",
      // ns summed, then whole microseconds
      "nv_inference_request_duration_us{model=\"simple\",version=\"1\"} 2500\n",
      "nv_inference_queue_duration_us{model=\"simple\",version=\"1\"} 500\n",
      "nv_inference_compute_input_duration_us{model=\"simple\",version=\"1\"} 10\n",
      "nv_inference_compute_infer_duration_us{model=\"simple\",version=\"1\"} 2000\n",
      "nv_inference_compute_output_duration_us{model=\"simple\",version=\"1\"} 3\n",
  };
  for (const char* e : expected) EXPECT_NE(text.find(e), std::string::npos) << e << "\n" << text;
  EXPECT_EQ(text.find("_total{model=\"simple\",version"), std::string::npos);  // as Triton
}

TEST(MetricsModelTest, HistogramsInSecondsAndBatchRows) {
  const std::string text = Text(ModelFamilies({Version("m", 3)}, {}));
  const char* expected[] = {
      "# TYPE inferd_request_duration_seconds histogram\n"
      "inferd_request_duration_seconds_bucket{le=\"5e-05\",model=\"m\",version=\"3\"} 0\n"
      "inferd_request_duration_seconds_bucket{le=\"0.5\",model=\"m\",version=\"3\"} 2\n"
      "inferd_request_duration_seconds_bucket{le=\"+Inf\",model=\"m\",version=\"3\"} 2\n"
      "inferd_request_duration_seconds_sum{model=\"m\",version=\"3\"} 0.002500999\n"
      "inferd_request_duration_seconds_count{model=\"m\",version=\"3\"} 2\n",
      "inferd_queue_duration_seconds_count{model=\"m\",version=\"3\"} 2\n",
      "inferd_compute_infer_duration_seconds_sum{model=\"m\",version=\"3\"} 0.002\n",
      "# TYPE inferd_batch_size histogram\n"
      "inferd_batch_size_bucket{le=\"1\",model=\"m\",version=\"3\"} 0\n"
      "inferd_batch_size_bucket{le=\"2\",model=\"m\",version=\"3\"} 1\n"
      "inferd_batch_size_bucket{le=\"4\",model=\"m\",version=\"3\"} 1\n"
      "inferd_batch_size_bucket{le=\"+Inf\",model=\"m\",version=\"3\"} 1\n"
      "inferd_batch_size_sum{model=\"m\",version=\"3\"} 2\n"
      "inferd_batch_size_count{model=\"m\",version=\"3\"} 1\n",
  };
  for (const char* e : expected) EXPECT_NE(text.find(e), std::string::npos) << e << "\n" << text;
}

TEST(MetricsModelTest, LoadFailuresForLoadedAndFailedModels) {
  auto fams = ModelFamilies({Version("good", 1)}, {{"broken", 2}});
  const MetricFamily* f = Find(fams, "inferd_model_load_failures_total");
  ASSERT_NE(f, nullptr);
  const std::string text = Text({*f});
  EXPECT_NE(text.find("inferd_model_load_failures_total{model=\"broken\"} 2\n"
                      "inferd_model_load_failures_total{model=\"good\"} 0\n"),
            std::string::npos)
      << text;
}

TEST(MetricsModelTest, NoModelsNoModelSeries) { EXPECT_EQ(Text(ModelFamilies({}, {})), ""); }

TEST(MetricsModelTest, ParsesLatencyBuckets) {
  auto b = ParseLatencyBuckets("metrics-latency-buckets", "0.0005, 0.001,0.01,1,10");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*b, (std::vector<double>{0.0005, 0.001, 0.01, 1, 10}));
  auto bad = [](const char* text) {
    auto r = ParseLatencyBuckets("metrics-latency-buckets", text);
    EXPECT_FALSE(r.ok()) << text;
    if (r.ok()) return std::string();
    EXPECT_NE(r.status().message().find("--metrics-latency-buckets"), std::string::npos);
    return r.status().message();
  };
  bad("");
  bad("0.1,,1");
  bad("0.1,abc");
  bad("0.1,");
  bad("nan");
  EXPECT_NE(bad("1,0.5").find("ascending"), std::string::npos);
  EXPECT_NE(bad("1,1").find("ascending"), std::string::npos);
  EXPECT_NE(bad("0.1,0.1000000001").find("ascending"), std::string::npos);  // same ns
  EXPECT_NE(bad("0").find("outside"), std::string::npos);
  EXPECT_NE(bad("-1").find("outside"), std::string::npos);
}

TEST(MetricsFlagsTest, MetricsFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->allow_metrics);
  EXPECT_EQ(cl->metrics_port, 8002);
  EXPECT_EQ(cl->metrics_interval_ms, 2000);
  EXPECT_EQ(cl->server.histograms.latency_buckets_s,
            StatsHistogramOptions::DefaultLatencyBuckets());

  cl =
      ParseCommandLine({"--model-repository=/m", "--metrics-port=0", "--metrics-interval-ms", "250",
                        "--metrics-latency-buckets=0.001,0.01,0.1", "--metrics-address=127.0.0.1"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->metrics_port, 0);
  EXPECT_EQ(cl->metrics_interval_ms, 250);
  EXPECT_EQ(cl->metrics_address, "127.0.0.1");
  EXPECT_EQ(cl->server.histograms.latency_buckets_s, (std::vector<double>{0.001, 0.01, 0.1}));

  for (const char* bad : {"--metrics-interval-ms=0", "--metrics-latency-buckets=0.1,0.01",
                          "--metrics-latency-buckets="}) {
    auto r = ParseCommandLine({"--model-repository=/m", bad});
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      const std::string flag = std::string(bad).substr(0, std::string(bad).find('='));
      EXPECT_NE(r.status().message().find(flag), std::string::npos) << r.status().message();
    }
  }
}

}  // namespace
}  // namespace inferd::metrics
