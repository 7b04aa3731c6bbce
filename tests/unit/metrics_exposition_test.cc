#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/exposition.h"

namespace inferd::metrics {
namespace {

std::string Render(const std::vector<MetricFamily>& families) {
  std::string out;
  WriteText(families, out);
  return out;
}

TEST(MetricsExpositionTest, CounterWithHelpTypeAndSortedLabels) {
  MetricFamily f;
  f.name = "nv_inference_request_failure";
  f.help = "Number of failed inference requests, all batch sizes";
  f.type = MetricType::kCounter;
  f.samples.push_back(Sample{{{"version", "1"}, {"reason", "BACKEND"}, {"model", "simple"}}, 0});
  f.samples.push_back(Sample{{{"version", "1"}, {"model", "simple"}, {"reason", "OTHER"}}, 12});
  EXPECT_EQ(Render({f}),
            "# HELP nv_inference_request_failure Number of failed inference requests, all batch "
            "sizes\n"
            "# TYPE nv_inference_request_failure counter\n"
            "nv_inference_request_failure{model=\"simple\",reason=\"BACKEND\",version=\"1\"} 0\n"
            "nv_inference_request_failure{model=\"simple\",reason=\"OTHER\",version=\"1\"} 12\n");
}

TEST(MetricsExpositionTest, GaugeWithoutLabels) {
  MetricFamily f{"nv_cpu_utilization",
                 "CPU utilization rate [0.0 - 1.0]",
                 MetricType::kGauge,
                 {Sample{{}, 0.25}},
                 {}};
  EXPECT_EQ(Render({f}),
            "# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]\n"
            "# TYPE nv_cpu_utilization gauge\n"
            "nv_cpu_utilization 0.25\n");
}

TEST(MetricsExpositionTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain-name.v2 ü"), "plain-name.v2 ü");
  EXPECT_EQ(EscapeHelp("line1\nback\\slash \"quoted\""), "line1\\nback\\\\slash \"quoted\"");
  MetricFamily f{"m",
                 "help\nwith newline",
                 MetricType::kGauge,
                 {Sample{{{"model", "we\"ird\\name\n"}}, 1}},
                 {}};
  EXPECT_EQ(Render({f}),
            "# HELP m help\\nwith newline\n"
            "# TYPE m gauge\n"
            "m{model=\"we\\\"ird\\\\name\\n\"} 1\n");
}

TEST(MetricsExpositionTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricFamily f;
  f.name = "inferd_request_duration_seconds";
  f.help = "h";
  f.type = MetricType::kHistogram;
  HistogramSample h;
  h.labels = {{"version", "2"}, {"model", "m"}};
  h.bounds = {0.0001, 0.5, 1};
  h.counts = {1, 2, 0, 3};  // the last one above 1 s
  h.sum = 7.25;
  f.histograms.push_back(h);
  EXPECT_EQ(Render({f}),
            "# HELP inferd_request_duration_seconds h\n"
            "# TYPE inferd_request_duration_seconds histogram\n"
            "inferd_request_duration_seconds_bucket{le=\"0.0001\",model=\"m\",version=\"2\"} 1\n"
            "inferd_request_duration_seconds_bucket{le=\"0.5\",model=\"m\",version=\"2\"} 3\n"
            "inferd_request_duration_seconds_bucket{le=\"1\",model=\"m\",version=\"2\"} 3\n"
            "inferd_request_duration_seconds_bucket{le=\"+Inf\",model=\"m\",version=\"2\"} 6\n"
            "inferd_request_duration_seconds_sum{model=\"m\",version=\"2\"} 7.25\n"
            "inferd_request_duration_seconds_count{model=\"m\",version=\"2\"} 6\n");
}

TEST(MetricsExpositionTest, HistogramWithoutLabelsStillLabelsBuckets) {
  MetricFamily f{"h", "x", MetricType::kHistogram, {}, {HistogramSample{{}, {1}, {0, 0}, 0}}};
  EXPECT_EQ(Render({f}),
            "# HELP h x\n# TYPE h histogram\n"
            "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

TEST(MetricsExpositionTest, FamiliesWithoutSeriesAreLeftOut) {
  MetricFamily empty_counter{"a", "x", MetricType::kCounter, {}, {}};
  MetricFamily empty_hist{"b", "x", MetricType::kHistogram, {}, {}};
  MetricFamily one{"c", "x", MetricType::kGauge, {Sample{{}, 3}}, {}};
  EXPECT_EQ(Render({empty_counter, empty_hist, one}), "# HELP c x\n# TYPE c gauge\nc 3\n");
}

TEST(MetricsExpositionTest, FormatsValues) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(123456789012345.0), "123456789012345");
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(0.0001), "0.0001");
  EXPECT_EQ(FormatValue(0.00005), "5e-05");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(1e20), "1e+20");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  // Shortest form that reads back exactly.
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(FormatValue(third)), third);
}

}  // namespace
}  // namespace inferd::metrics
