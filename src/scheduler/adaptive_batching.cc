#include "scheduler/adaptive_batching.h"

#include <algorithm>
#include <bit>

#include "scheduler/model_stats.h"

namespace inferd {
namespace {

template <size_t N>
int64_t Median(const std::array<int64_t, N>& values, size_t count) {
  // Insertion sort of at most N values (std::sort trips GCC 12's
  // -Warray-bounds on a 5-element array).
  std::array<int64_t, N> v = values;
  count = std::min(count, N);
  for (size_t i = 1; i < count; ++i) {
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; --j) std::swap(v[j - 1], v[j]);
  }
  return v[count / 2];
}

}  // namespace

size_t ExecTimeEstimate::Bucket(int64_t rows) const {
  rows = std::max<int64_t>(1, rows);
  const size_t b = static_cast<size_t>(std::bit_width(static_cast<uint64_t>(rows))) - 1;
  const bool own = max_ > 0 && rows >= max_ && !std::has_single_bit(static_cast<uint64_t>(max_));
  return own ? b + 1 : b;
}

void ExecTimeEstimate::Record(int64_t rows, int64_t ns) {
  rows = std::max<int64_t>(1, rows);
  ++executions_;
  const size_t b = Bucket(rows);
  if (buckets_.size() <= b) buckets_.resize(b + 1);
  Samples& s = buckets_[b];
  s.rows[s.next] = rows;
  s.ns[s.next] = std::max<int64_t>(0, ns);
  s.next = (s.next + 1) % kWindow;
  s.count = std::min(kWindow, s.count + 1);
  s.last_exec = executions_;
}

ExecTimeEstimate::Point ExecTimeEstimate::PointOf(const Samples& s) const {
  Point p;
  if (s.count == 0) return p;
  // Medians: one slow outlier (a page fault, a preempted thread) among the
  // window's samples moves neither.
  p.rows = Median(s.rows, s.count);
  p.ns = static_cast<double>(Median(s.ns, s.count));
  p.samples = s.count;
  p.last_exec = s.last_exec;
  return p;
}

std::vector<ExecTimeEstimate::Point> ExecTimeEstimate::Points() const {
  std::vector<Point> out;
  for (const Samples& s : buckets_) {
    if (s.count > 0) out.push_back(PointOf(s));
  }
  return out;
}

ExecTimeEstimate::Point ExecTimeEstimate::BucketOf(int64_t rows) const {
  const size_t b = Bucket(rows);
  return b < buckets_.size() ? PointOf(buckets_[b]) : Point{};
}

void ArrivalGap::OnArrival(TimePoint now, int64_t rows, bool queue_was_empty) {
  rows = std::max<int64_t>(1, rows);
  if (!queue_was_empty && last_ != TimePoint{}) {
    const int64_t per_row =
        std::max<int64_t>(
            0, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count()) /
        rows;
    gap_ns_ = gap_ns_ == 0 ? std::max<int64_t>(1, per_row) : gap_ns_ - gap_ns_ / 8 + per_row / 8;
    gap_ns_ = std::max<int64_t>(1, gap_ns_);
  }
  last_ = now;
}

double EstimateNs(std::span<const ExecTimeEstimate::Point> points, double rows) {
  if (points.empty()) return 0;
  const auto& first = points.front();
  const auto& last = points.back();
  if (rows <= static_cast<double>(first.rows)) return first.ns;
  if (rows >= static_cast<double>(last.rows)) {
    return last.ns * rows / static_cast<double>(last.rows);
  }
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& a = points[i - 1];
    const auto& b = points[i];
    if (rows <= static_cast<double>(b.rows)) {
      const double f = (rows - static_cast<double>(a.rows)) / static_cast<double>(b.rows - a.rows);
      return a.ns + f * (b.ns - a.ns);
    }
  }
  return last.ns;
}

AdaptiveDecision DecideAdaptive(const ExecTimeEstimate& estimate, const AdaptiveInput& in,
                                const AdaptiveParams& params) {
  using std::chrono::nanoseconds;
  AdaptiveDecision d;
  const int64_t max = std::max<int64_t>(1, in.max_batch_size);
  const std::vector<ExecTimeEstimate::Point> points = estimate.Points();

  // 1. The measured size with the most rows per second (the smallest near it).
  double best_tp = 0;
  for (const auto& p : points) {
    if (p.samples >= params.min_samples && p.ns > 0) {
      best_tp = std::max(best_tp, static_cast<double>(p.rows) / p.ns);
    }
  }
  for (const auto& p : points) {
    if (p.samples >= params.min_samples && p.ns > 0 &&
        static_cast<double>(p.rows) / p.ns >= best_tp * (1 - params.prefer_smaller)) {
      d.best = std::min(max, p.rows);
      break;
    }
  }
  d.target = d.best;

  // 2. Exploration of the neighbours: with the rows queued, or (larger
  // sizes only, now and then) waiting for the rows of the recent population.
  auto needs_sample = [&](int64_t size) {
    const auto p = estimate.BucketOf(size);
    return p.samples < params.min_samples ||
           estimate.executions() - p.last_exec >= params.stale_after;
  };
  const size_t bb = estimate.Bucket(d.best);
  if (estimate.BucketOf(d.best).samples >= params.min_samples) {
    const int64_t up = bb + 1 < 63 ? std::min<int64_t>(max, int64_t{1} << (bb + 1)) : max;
    const int64_t down = bb > 0 ? int64_t{1} << (bb - 1) : 0;
    const bool up_ok = estimate.Bucket(up) > bb && needs_sample(up);
    if (up_ok && in.queued_rows >= up) {
      d.target = up;
    } else if (up_ok && in.population >= up && in.may_wait_to_explore && in.max_delay.count() > 0 &&
               in.held < in.max_delay) {
      d.target = up;
      d.explore_wait = true;
    } else if (down > 0 && in.queued_rows >= down && needs_sample(down)) {
      d.target = down;
    }
  }

  // 3. Enough rows, no bound, or the bound reached.
  if (in.queued_rows >= d.target || in.max_delay.count() <= 0 || in.held >= in.max_delay) {
    d.explore_wait = false;
    return d;
  }
  // 4. No idea how fast rows come, or they stopped coming.
  const int64_t gap = in.row_gap.count();
  const int64_t quiet = std::max<int64_t>(params.quiet_gaps * gap, 2 * in.turnaround.count());
  const int64_t since = in.since_last_event.count();
  if (quiet <= 0 || since >= quiet || points.empty()) {
    d.explore_wait = false;
    return d;
  }
  // 5. Wait only if it pays, counting the wait (exploring: to measure).
  const int64_t remaining = (in.max_delay - in.held).count();
  if (!d.explore_wait) {
    const double per_row = static_cast<double>(gap > 0 ? gap : in.turnaround.count());
    const double queued = static_cast<double>(std::max<int64_t>(1, in.queued_rows));
    const double wait_ns = std::min(static_cast<double>(d.target - in.queued_rows) * per_row,
                                    static_cast<double>(remaining));
    const double rows_then = std::min(static_cast<double>(d.target), queued + wait_ns / per_row);
    const double now_ns = EstimateNs(points, queued);
    const double then_ns = EstimateNs(points, rows_then);
    if (now_ns <= 0 || then_ns <= 0 || rows_then / (wait_ns + then_ns) <= queued / now_ns) {
      return d;
    }
  }
  d.take_now = false;
  d.wait = nanoseconds(std::max<int64_t>(1000, std::min(remaining, quiet - since)));
  return d;
}

AdaptiveBatcher::AdaptiveBatcher(size_t instances, int64_t max_batch_size, ModelStats* stats)
    : instances_(std::max<size_t>(1, instances), Instance{ExecTimeEstimate(max_batch_size)}),
      max_batch_size_(std::max<int64_t>(1, max_batch_size)),
      stats_(stats) {
  if (stats_) stats_->SetBatchTarget(1);
}

void AdaptiveBatcher::SampleInSystem() {
  in_system_[in_system_next_] = queued_rows_ + executing_rows_;
  in_system_next_ = (in_system_next_ + 1) % in_system_.size();
}

void AdaptiveBatcher::OnArrival(TimePoint now, int64_t rows, bool queue_was_empty) {
  arrivals_.OnArrival(now, rows, queue_was_empty);
  queued_rows_ = (queue_was_empty ? 0 : queued_rows_) + rows;
  SampleInSystem();
  if (completion_seen_) {
    // The first arrival after a completion: how soon clients come back.
    completion_seen_ = false;
    const int64_t ns = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_completion_).count());
    turnaround_ns_ = turnaround_ns_ == 0 ? ns : turnaround_ns_ - turnaround_ns_ / 8 + ns / 8;
  }
}

void AdaptiveBatcher::Apply(size_t index, std::span<const BatchCandidate> queue, TimePoint now,
                            BatchPolicy& policy) {
  if (queue.empty() || index >= instances_.size()) return;
  Instance& inst = instances_[index];
  AdaptiveInput in;
  in.max_batch_size = max_batch_size_;
  int64_t all_rows = 0;
  bool prefix = true;
  for (const auto& c : queue) {
    all_rows += c.rows;
    if (!prefix || c.signature != queue.front().signature ||
        in.queued_rows + c.rows > max_batch_size_) {
      prefix = false;
      continue;
    }
    in.queued_rows += c.rows;
  }
  queued_rows_ = all_rows;
  SampleInSystem();
  in.population = *std::max_element(in_system_.begin(), in_system_.end());
  const auto head_wait = now - queue.front().arrival;
  in.held = now - std::max(inst.free_since, queue.front().arrival);
  in.max_delay = policy.max_queue_delay;
  in.since_last_event = now - std::max(arrivals_.last(), last_completion_);
  in.row_gap = arrivals_.gap();
  in.turnaround = std::chrono::nanoseconds(turnaround_ns_);
  const uint64_t execs = inst.estimate.executions();
  in.may_wait_to_explore = inst.explore_wait_exec == UINT64_MAX ||
                           inst.explore_wait_exec == execs ||
                           execs - inst.explore_wait_exec >= AdaptiveParams{}.explore_wait_every;
  const AdaptiveDecision d = DecideAdaptive(inst.estimate, in);
  if (d.explore_wait && !d.take_now) inst.explore_wait_exec = execs;
  if (stats_ && d.best != published_) {
    published_ = d.best;
    stats_->SetBatchTarget(d.best);
  }
  policy.max_batch_size = std::max<int64_t>(1, d.target);
  if (d.take_now) {
    policy.max_queue_delay = std::chrono::microseconds(0);
  } else {
    // DecideBatch wakes at the head's arrival + the delay: now + the wait.
    policy.max_queue_delay = std::chrono::ceil<std::chrono::microseconds>(head_wait + d.wait);
  }
}

void AdaptiveBatcher::Start(size_t index, int64_t rows) {
  if (index >= instances_.size()) return;
  executing_rows_ += rows;
  queued_rows_ = std::max<int64_t>(0, queued_rows_ - rows);
}

void AdaptiveBatcher::Record(size_t index, int64_t rows, std::chrono::steady_clock::duration took,
                             TimePoint now) {
  if (index >= instances_.size()) return;
  executing_rows_ = std::max<int64_t>(0, executing_rows_ - rows);
  Instance& inst = instances_[index];
  inst.estimate.Record(rows, std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
  inst.free_since = now;
  last_completion_ = now;
  completion_seen_ = true;
}

}  // namespace inferd
