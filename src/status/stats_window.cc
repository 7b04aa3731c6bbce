#include "status/stats_window.h"

#include <algorithm>
#include <cmath>

namespace inferd::status {
namespace {

// Snapshot times are the sampler's scheduled ticks (StatusService), so a
// window of exactly 60 s holds a snapshot 60 s old; the slack only absorbs
// floating-point rounding.
constexpr double kTimeSlack = 1e-6;

std::optional<double> Ratio(double numerator, double denominator) {
  if (denominator <= 0) return std::nullopt;
  return numerator / denominator;
}

double Delta(uint64_t older, uint64_t newer) {
  return newer >= older ? static_cast<double>(newer - older) : 0.0;
}

bool HistogramReset(const HistogramSnapshot& older, const HistogramSnapshot& newer) {
  if (older.bounds != newer.bounds || older.counts.size() != newer.counts.size()) return true;
  for (size_t i = 0; i < older.counts.size(); ++i) {
    if (newer.counts[i] < older.counts[i]) return true;
  }
  return newer.sum < older.sum;
}

}  // namespace

std::optional<double> HistogramQuantile(double q, const std::vector<double>& bounds,
                                        std::vector<double> cumulative) {
  // Prometheus answers -Inf/+Inf outside [0, 1] and NaN for NaN; the page
  // only asks for 0.5 and 0.99, and "no value" is what it can show.
  if (!(q >= 0 && q <= 1)) return std::nullopt;
  if (bounds.empty() || cumulative.size() != bounds.size() + 1) return std::nullopt;
  // ensureMonotonic: a count below its predecessor is raised to it.
  for (size_t i = 1; i < cumulative.size(); ++i) {
    cumulative[i] = std::max(cumulative[i], cumulative[i - 1]);
  }
  const double observations = cumulative.back();
  if (observations <= 0) return std::nullopt;
  double rank = q * observations;
  // The first finite bucket whose cumulative count reaches the rank; none:
  // the rank is in the +Inf bucket, answered with the highest finite bound.
  size_t b = 0;
  while (b < bounds.size() && cumulative[b] < rank) ++b;
  if (b == bounds.size()) return bounds.back();
  if (b == 0 && bounds[0] <= 0) return bounds[0];
  double start = 0, count = cumulative[b];
  if (b > 0) {
    start = bounds[b - 1];
    count -= cumulative[b - 1];
    rank -= cumulative[b - 1];
  }
  return start + (bounds[b] - start) * (rank / count);
}

std::optional<double> DeltaQuantile(double q, const HistogramSnapshot& older,
                                    const HistogramSnapshot& newer, double per_unit) {
  if (newer.counts.empty() || older.bounds != newer.bounds ||
      older.counts.size() != newer.counts.size() ||
      newer.counts.size() != newer.bounds.size() + 1) {
    return std::nullopt;
  }
  std::vector<double> bounds, cumulative;
  bounds.reserve(newer.bounds.size());
  for (uint64_t b : newer.bounds) bounds.push_back(static_cast<double>(b) / per_unit);
  double running = 0;
  for (size_t i = 0; i < newer.counts.size(); ++i) {
    running += Delta(older.counts[i], newer.counts[i]);
    cumulative.push_back(running);
  }
  return HistogramQuantile(q, bounds, std::move(cumulative));
}

VersionCounters VersionCounters::From(const ModelStatsSnapshot& s) {
  VersionCounters c;
  c.inferences = s.inference_count;
  c.successes = s.success.count;
  c.failures = s.fail_rejected + s.fail_cancelled + s.fail_backend + s.fail_other;
  c.executions = s.execution_count;
  c.queue_us = s.queue.ns / 1000;  // as nv_inference_queue_duration_us: the total, truncated
  c.request = s.request_hist;
  c.queue = s.queue_hist;
  c.compute_infer = s.compute_infer_hist;
  c.batch_size = s.batch_size_hist;
  return c;
}

WindowFigures Between(const VersionCounters& older, double t_older, const VersionCounters& newer,
                      double t_newer) {
  WindowFigures f;
  f.seconds = t_newer - t_older;
  if (f.seconds <= 0) return f;
  f.inferences_per_s = Delta(older.inferences, newer.inferences) / f.seconds;
  f.requests_per_s = Delta(older.successes, newer.successes) / f.seconds;
  f.failures_per_s = Delta(older.failures, newer.failures) / f.seconds;
  f.executions_per_s = Delta(older.executions, newer.executions) / f.seconds;
  f.p50_s = DeltaQuantile(0.5, older.request, newer.request, 1e9);
  f.p99_s = DeltaQuantile(0.99, older.request, newer.request, 1e9);
  f.queue_p50_s = DeltaQuantile(0.5, older.queue, newer.queue, 1e9);
  f.queue_p99_s = DeltaQuantile(0.99, older.queue, newer.queue, 1e9);
  f.compute_p50_s = DeltaQuantile(0.5, older.compute_infer, newer.compute_infer, 1e9);
  f.compute_p99_s = DeltaQuantile(0.99, older.compute_infer, newer.compute_infer, 1e9);
  f.queue_us_per_request =
      Ratio(Delta(older.queue_us, newer.queue_us), Delta(older.successes, newer.successes));
  f.batch_size_mean = Ratio(Delta(older.batch_size.sum, newer.batch_size.sum),
                            Delta(older.batch_size.Count(), newer.batch_size.Count()));
  return f;
}

bool IsReset(const VersionCounters& older, const VersionCounters& newer) {
  return newer.inferences < older.inferences || newer.successes < older.successes ||
         newer.failures < older.failures || newer.executions < older.executions ||
         newer.queue_us < older.queue_us || HistogramReset(older.request, newer.request) ||
         HistogramReset(older.queue, newer.queue) ||
         HistogramReset(older.compute_infer, newer.compute_infer) ||
         HistogramReset(older.batch_size, newer.batch_size);
}

StatsWindow::StatsWindow(double window_s, double chart_step_s)
    : window_s_(window_s), chart_step_s_(chart_step_s) {}

void StatsWindow::Add(double t_s, std::map<SeriesKey, VersionCounters> versions) {
  if (!snapshots_.empty() && t_s <= snapshots_.back().t_s) return;
  snapshots_.push_back(Snapshot{t_s, std::move(versions)});
  // Keep what the window (and so the chart) can still reach.
  while (snapshots_.size() > 1 && snapshots_.front().t_s < t_s - window_s_ - kTimeSlack) {
    snapshots_.pop_front();
  }
}

size_t StatsWindow::WindowStart(const SeriesKey& key, double from_t) const {
  size_t j = snapshots_.size() - 1;
  while (j > 0) {
    const Snapshot& prev = snapshots_[j - 1];
    if (prev.t_s < from_t - kTimeSlack) break;
    auto p = prev.versions.find(key);
    if (p == prev.versions.end()) break;  // the version was not serving then
    if (IsReset(p->second, snapshots_[j].versions.at(key))) break;
    --j;
  }
  return j;
}

std::vector<ChartPoint> StatsWindow::Chart(const SeriesKey& key) const {
  std::vector<ChartPoint> points;
  const double newest = snapshots_.back().t_s;
  // The snapshot nearest to `t`, within half a step; npos when none.
  auto nearest = [&](double t) {
    size_t best = std::string::npos;
    double best_d = chart_step_s_ / 2 + kTimeSlack;
    for (size_t i = 0; i < snapshots_.size(); ++i) {
      const double d = std::fabs(snapshots_[i].t_s - t);
      if (d <= best_d) {
        best = i;
        best_d = d;
      }
    }
    return best;
  };
  const int steps = static_cast<int>(std::floor(window_s_ / chart_step_s_ + kTimeSlack));
  for (int k = steps - 1; k >= 0; --k) {
    const size_t end = nearest(newest - k * chart_step_s_);
    const size_t begin = nearest(newest - (k + 1) * chart_step_s_);
    if (end == std::string::npos || begin == std::string::npos || begin >= end) continue;
    auto e = snapshots_[end].versions.find(key);
    if (e == snapshots_[end].versions.end()) continue;
    // Every snapshot in between must hold the version, with no reset.
    bool continuous = true;
    for (size_t i = begin; i < end && continuous; ++i) {
      auto a = snapshots_[i].versions.find(key);
      auto b = snapshots_[i + 1].versions.find(key);
      continuous = a != snapshots_[i].versions.end() && b != snapshots_[i + 1].versions.end() &&
                   !IsReset(a->second, b->second);
    }
    if (!continuous) continue;
    const WindowFigures f = Between(snapshots_[begin].versions.at(key), snapshots_[begin].t_s,
                                    e->second, snapshots_[end].t_s);
    points.push_back(
        ChartPoint{newest - snapshots_[end].t_s, f.inferences_per_s, f.p50_s, f.p99_s});
  }
  return points;
}

std::map<SeriesKey, SeriesFigures> StatsWindow::Compute() const {
  std::map<SeriesKey, SeriesFigures> out;
  if (snapshots_.empty()) return out;
  const Snapshot& newest = snapshots_.back();
  for (const auto& [key, counters] : newest.versions) {
    SeriesFigures& s = out[key];
    const size_t start = WindowStart(key, newest.t_s - window_s_);
    if (start + 1 < snapshots_.size()) {
      s.window =
          Between(snapshots_[start].versions.at(key), snapshots_[start].t_s, counters, newest.t_s);
    }
    s.chart = Chart(key);
  }
  return out;
}

}  // namespace inferd::status
