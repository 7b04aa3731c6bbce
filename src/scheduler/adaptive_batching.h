// Adaptive dynamic batching (docs/batching.md): instead of always filling
// batches up to max_batch_size, each instance learns how long its
// executions take by batch size and aims for the size that gives the most
// rows per second, waiting for more rows only while that pays and never
// longer than the model's max_queue_delay_microseconds.
//
// Three pieces:
//  - ExecTimeEstimate: one instance's execution time by batch size, online
//    and robust to noise (median of the last few samples per power-of-two
//    bucket, interpolated between buckets). Pure data, no clock.
//  - ArrivalGap: the recent time between request rows arriving while a
//    queue holds work (how soon more rows come). Pure, fed the times.
//  - DecideAdaptive: the pure decision (table-tested): target size, take
//    now or wait how long.
// AdaptiveBatcher ties them to DynamicBatchScheduler: it narrows the
// BatchPolicy the classic DecideBatch then applies.
//
// Threading: none of these lock; the scheduler calls AdaptiveBatcher only
// under its queue lock. Errors: none (bad inputs are clamped).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/batch_policy.h"

namespace inferd {

class ModelStats;

class ExecTimeEstimate {
 public:
  // One measured batch-size bucket: the median rows and median time of its
  // recent samples.
  struct Point {
    int64_t rows = 0;
    double ns = 0;
    size_t samples = 0;      // samples held (up to kWindow)
    uint64_t last_exec = 0;  // executions() when it was last sampled
  };
  static constexpr size_t kWindow = 5;

  // `max_batch_size` (0: none): when not a power of two, it gets a bucket
  // of its own above the last power of two, so it can be measured apart.
  explicit ExecTimeEstimate(int64_t max_batch_size = 0) : max_(max_batch_size) {}

  // Records one execution of `rows` rows that took `ns` nanoseconds.
  void Record(int64_t rows, int64_t ns);
  // Buckets with at least one sample, ascending by rows.
  std::vector<Point> Points() const;
  // The bucket `rows` falls in (floor(log2(rows))); samples 0 if none.
  Point BucketOf(int64_t rows) const;
  uint64_t executions() const { return executions_; }

  size_t Bucket(int64_t rows) const;

 private:
  struct Samples {
    std::array<int64_t, kWindow> rows{}, ns{};
    size_t count = 0, next = 0;
    uint64_t last_exec = 0;
  };
  Point PointOf(const Samples& s) const;
  int64_t max_ = 0;
  std::vector<Samples> buckets_;
  uint64_t executions_ = 0;
};

// The per-row gap between arrivals that find work already queued (an
// arrival into an empty queue starts a new burst: the time since the last
// one says nothing about how fast rows come while a batch forms).
class ArrivalGap {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  void OnArrival(TimePoint now, int64_t rows, bool queue_was_empty);
  std::chrono::nanoseconds gap() const { return std::chrono::nanoseconds(gap_ns_); }
  TimePoint last() const { return last_; }

 private:
  TimePoint last_{};
  int64_t gap_ns_ = 0;  // 0: unknown
};

struct AdaptiveParams {
  size_t min_samples = 3;            // a bucket counts as measured with this many samples
  uint64_t stale_after = 200;        // executions after which a neighbour is measured again
  double prefer_smaller = 0.10;      // the smallest size within 10% of the best throughput wins
  int quiet_gaps = 3;                // no arrival for this many gaps: no more rows are coming
  uint64_t explore_wait_every = 16;  // executions between waits for rows to explore
};

struct AdaptiveInput {
  int64_t max_batch_size = 1;
  int64_t queued_rows = 0;  // rows of the batchable prefix of the queue
  // Recent high-water mark of rows queued + executing: closed-loop clients
  // whose batch just finished come back (0: unknown).
  int64_t population = 0;
  // How long the batcher itself has held the head back: since the later of
  // its arrival and the instance becoming free (time spent waiting for a
  // busy instance is not batching delay).
  std::chrono::nanoseconds held{0};
  std::chrono::nanoseconds max_delay{0};         // the bound on `held`; 0: never wait for more rows
  std::chrono::nanoseconds since_last_event{0};  // since the last arrival or completion
  std::chrono::nanoseconds row_gap{0};           // ArrivalGap::gap(); 0: unknown
  std::chrono::nanoseconds turnaround{0};  // completion to the next arrival, recently; 0: unknown
  bool may_wait_to_explore = true;         // no exploration wait in the last executions
};

struct AdaptiveDecision {
  int64_t best = 1;                  // the size with the best measured throughput (the gauge)
  int64_t target = 1;                // the size aimed for now (best, or a size being explored)
  bool explore_wait = false;         // waiting for rows to measure a larger size
  bool take_now = true;              // take up to `target` rows now
  std::chrono::nanoseconds wait{0};  // otherwise decide again after this long
};

// Rules:
//  1. best = the measured size (>= min_samples) with the most rows/second;
//     the smallest within prefer_smaller of the maximum (batching must
//     pay clearly: it adds latency). Nothing measured: 1.
//  2. Exploration: the next power of two above best, when unmeasured or
//     stale and the queue (or, waiting for it, the recent population) holds
//     that many rows; else the one below, when unmeasured or stale and
//     queued. That size becomes the target. Waiting to explore happens at
//     most once per explore_wait_every executions.
//  3. queued >= target, no bound (0), or the head held for the bound: take now.
//  4. Arrivals unknown, or none for max(quiet_gaps gaps, 2 turnarounds)
//     since the last arrival or completion: take now.
//  5. Except when exploring, wait only if the rows expected within the
//     bound give more rows per second, counting the wait, than taking the
//     queue now; then decide again when the next arrival is overdue.
AdaptiveDecision DecideAdaptive(const ExecTimeEstimate& estimate, const AdaptiveInput& in,
                                const AdaptiveParams& params = {});

// The estimated execution time of `rows` rows from measured points
// (ascending): linear between points, the nearest point's time below the
// first, proportional to rows above the last. 0 without points.
double EstimateNs(std::span<const ExecTimeEstimate::Point> points, double rows);

class AdaptiveBatcher {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // `stats` (may be null) receives the chosen size (its gauge).
  AdaptiveBatcher(size_t instances, int64_t max_batch_size, ModelStats* stats);

  void OnArrival(TimePoint now, int64_t rows, bool queue_was_empty);
  // Narrows `policy` (max_batch_size, max_queue_delay) for instance
  // `index`'s next DecideBatch over `queue` (serving order).
  void Apply(size_t index, std::span<const BatchCandidate> queue, TimePoint now,
             BatchPolicy& policy);
  // Instance `index` starts, then has finished, an execution of `rows` rows.
  void Start(size_t index, int64_t rows);
  void Record(size_t index, int64_t rows, std::chrono::steady_clock::duration took, TimePoint now);

 private:
  struct Instance {
    ExecTimeEstimate estimate;
    TimePoint free_since{};                   // last completion
    uint64_t explore_wait_exec = UINT64_MAX;  // estimate.executions() at the last exploration wait
  };
  std::vector<Instance> instances_;
  ArrivalGap arrivals_;
  const int64_t max_batch_size_;
  ModelStats* const stats_;
  int64_t published_ = 0;
  int64_t executing_rows_ = 0;
  int64_t queued_rows_ = 0;  // counted at arrivals, recounted at each Apply
  // Rows queued + executing at recent arrivals and decisions (with one
  // instance, a decision never sees the rows of the batch just finished).
  std::array<int64_t, 64> in_system_{};
  size_t in_system_next_ = 0;
  void SampleInSystem();
  TimePoint last_completion_{};
  bool completion_seen_ = false;  // a completion not yet followed by an arrival
  int64_t turnaround_ns_ = 0;
};

}  // namespace inferd
