// The Prometheus text exposition format, version 0.0.4: metric families as
// plain values, and the writer that renders them.
//
// Contract: names and label keys are the caller's constants and must already
// be valid Prometheus names ([a-zA-Z_:][a-zA-Z0-9_:]*); label values and help
// texts may hold anything and are escaped here. Label sets are written with
// their keys in sorted order (`le` included), as Triton does. Families
// without series are not written. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferd::metrics {

inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

using Labels = std::vector<std::pair<std::string, std::string>>;

// One counter or gauge series.
struct Sample {
  Labels labels;
  double value = 0;
};

// One histogram series: `bounds` are the ascending upper bounds (`le`) of the
// finite buckets; `counts` holds the observations per bucket, not
// cumulative, with the +Inf bucket last (bounds.size() + 1 entries).
struct HistogramSample {
  Labels labels;
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  double sum = 0;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<Sample> samples;              // counters and gauges
  std::vector<HistogramSample> histograms;  // histograms
};

// A family with no samples yet.
MetricFamily Family(std::string name, std::string help, MetricType type);

// Appends `families` to `out`: per family `# HELP`, `# TYPE`, then its
// series (`_bucket`, `_sum`, `_count` for a histogram).
void WriteText(const std::vector<MetricFamily>& families, std::string& out);

// A sample value: integers (|v| < 2^53) without a fraction or exponent,
// other finite values in the shortest form that reads back exactly, and
// `+Inf`, `-Inf`, `NaN`.
std::string FormatValue(double v);

// Label values escape backslash, double quote and newline; help texts escape
// backslash and newline.
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);

}  // namespace inferd::metrics
