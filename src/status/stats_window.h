// StatsWindow: the status page's per-version figures over the last minute
// (inferences/s, p50/p99 latency, ...), computed from snapshots of the
// counters and histograms the Prometheus metrics export, with the
// definitions the recording rules use (docs/status_page.md, "The numbers"):
//
//   a rate      = (newest - oldest) / (t_newest - t_oldest), `oldest` the
//                 oldest snapshot no older than the window (60 s);
//   a quantile  = Prometheus 2.42's histogram_quantile over the bucket
//                 deltas between the same two snapshots;
//   a ratio     = delta / delta (mean queue time, mean batch size).
//
// A counter that went down between two snapshots (the version was reloaded)
// is a reset: the window starts at the first snapshot after it. Fewer than
// two snapshots: no figure at all. No request in the window: rates are 0,
// ratios and quantiles have no value (nullopt; the page shows "—").
//
// Pure: no clock, no threads, no server. Not thread-safe; StatusService
// guards its window with a mutex and feeds it from its sampler thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/model_stats.h"

namespace inferd::status {

// Prometheus 2.42's histogram_quantile for one histogram: `bounds` the
// finite upper bounds, ascending; `cumulative` their cumulative counts
// followed by the +Inf bucket's (bounds.size() + 1 values). nullopt when
// there is no value (no finite bucket, no observation, q outside [0, 1]).
std::optional<double> HistogramQuantile(double q, const std::vector<double>& bounds,
                                        std::vector<double> cumulative);

// The same over the difference of two snapshots of one histogram (per
// bucket, non-cumulative counts as HistogramSnapshot holds them), bounds
// divided by `per_unit` (1e9: nanoseconds to seconds, as the metrics
// export them). nullopt when the two have different bounds.
std::optional<double> DeltaQuantile(double q, const HistogramSnapshot& older,
                                    const HistogramSnapshot& newer, double per_unit);

// What one version's statistics export, at one moment (the counters of
// metrics/model_metrics.cc, read the same way).
struct VersionCounters {
  uint64_t inferences = 0;  // nv_inference_count (batch-weighted)
  uint64_t successes = 0;   // nv_inference_request_success
  uint64_t failures = 0;    // nv_inference_request_failure, summed over reasons
  uint64_t executions = 0;  // nv_inference_exec_count
  uint64_t queue_us = 0;    // nv_inference_queue_duration_us (whole microseconds)
  HistogramSnapshot request, queue, compute_infer, batch_size;  // inferd_* histograms

  static VersionCounters From(const ModelStatsSnapshot& s);
};

// Figures between two snapshots of one version.
struct WindowFigures {
  double seconds = 0;  // the time between the two snapshots
  double inferences_per_s = 0, requests_per_s = 0, failures_per_s = 0, executions_per_s = 0;
  std::optional<double> p50_s, p99_s;                  // end-to-end latency
  std::optional<double> queue_p50_s, queue_p99_s;      // queue time
  std::optional<double> compute_p50_s, compute_p99_s;  // model execution (per batch)
  std::optional<double> queue_us_per_request;          // mean queue time, us
  std::optional<double> batch_size_mean;               // rows per execution
};

// The figures from `older` (at t_older seconds) to `newer` (at t_newer >
// t_older). Counters are assumed not reset in between (the caller checks
// with IsReset).
WindowFigures Between(const VersionCounters& older, double t_older, const VersionCounters& newer,
                      double t_newer);

// Whether `newer` cannot follow `older` without a reset (some counter or
// histogram bucket went down, or the histogram bounds changed).
bool IsReset(const VersionCounters& older, const VersionCounters& newer);

using SeriesKey = std::pair<std::string, int64_t>;  // (model, version)

// One point of the latency chart: the figures of one step (chart_step_s)
// ending `age_s` seconds before the newest snapshot.
struct ChartPoint {
  double age_s = 0;
  double inferences_per_s = 0;
  std::optional<double> p50_s, p99_s;
};

struct SeriesFigures {
  std::optional<WindowFigures> window;  // none: fewer than two snapshots
  std::vector<ChartPoint> chart;        // oldest first; steps with no data left out
};

class StatsWindow {
 public:
  // `window_s`: the figures' window (60); `chart_step_s`: the chart's step
  // (5). Snapshots older than the window are dropped as new ones arrive.
  explicit StatsWindow(double window_s = 60, double chart_step_s = 5);

  // Adds the snapshot of every serving version taken at `t_s` (seconds on a
  // monotonic clock; later than the previous one, else ignored).
  void Add(double t_s, std::map<SeriesKey, VersionCounters> versions);

  // The figures of every version in the newest snapshot.
  std::map<SeriesKey, SeriesFigures> Compute() const;

  size_t size() const { return snapshots_.size(); }
  double window_s() const { return window_s_; }

 private:
  struct Snapshot {
    double t_s = 0;
    std::map<SeriesKey, VersionCounters> versions;
  };
  // The index of the oldest snapshot the window of `key` starts at, or of
  // the newest when there is none before it.
  size_t WindowStart(const SeriesKey& key, double from_t) const;
  std::vector<ChartPoint> Chart(const SeriesKey& key) const;

  double window_s_;
  double chart_step_s_;
  std::deque<Snapshot> snapshots_;  // oldest first
};

}  // namespace inferd::status
