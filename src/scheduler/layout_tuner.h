// LayoutTuner: the pure decision behind the automatic instance and thread
// layout (issue 25 §3, docs/instance_layout.md).
//
// A model with N instances (N = the hardware threads) runs k of them at a
// time, each execution with t = N/k CPU threads: the candidates are k in the
// divisors of N, from 1×N (one execution at a time on every core: the best
// latency) to N×1 (N executions of one thread: usually the best throughput
// under load on a CPU). The tuner is fed with completed executions and, when
// the model is under load, tries each candidate for a trial window (a
// minimum time AND a minimum count of executions), measures the rows
// completed per second, and keeps the best; the layout in place before the
// search wins ties within `keep_margin`. It searches again when the load
// (requests queued or executing, sampled at each completion) moves by
// `load_change`× from the level measured during the search, or after
// `reevaluate`. Idle, nothing is fed and the layout stays. Before any
// measurement the layout is 1×N.
//
// Closed-loop clients make throughput the right single measure: at
// concurrency 1 throughput is 1/latency, so the latency-best layout wins by
// itself; under heavy load the throughput-best one does.
//
// Executions that began under an earlier layout (Record's `generation`)
// are not measured: they still ran with the old thread count.
//
// Pure and single-threaded: time is passed in; the caller serialises calls
// (scheduler/instance_layout.h). No errors.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace inferd {

// k instances taking executions, t CPU threads each (k × t = N).
struct Layout {
  int instances = 1;
  int threads = 1;
  bool operator==(const Layout&) const = default;
};

struct LayoutTunerOptions {
  std::chrono::nanoseconds trial = std::chrono::seconds(2);
  int min_executions = 16;
  double keep_margin = 0.05;  // the previous layout wins within 5 %
  double load_change = 2.0;   // search again when the load moves by this factor
  std::chrono::nanoseconds reevaluate = std::chrono::minutes(10);
  // A pause between completions longer than this restarts a trial's window
  // (idle time is not the layout's fault).
  std::chrono::nanoseconds idle_gap = std::chrono::seconds(1);
  // Completions seen while settled before a load change may trigger a
  // search (the load average needs that many samples to mean something).
  int min_settled_samples = 32;
};

class LayoutTuner {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `hardware_threads` >= 1 (smaller values are taken as 1).
  explicit LayoutTuner(int hardware_threads, LayoutTunerOptions options = {});

  // The candidates for N threads, 1×N first, N×1 last.
  static std::vector<Layout> Candidates(int hardware_threads);

  Layout current() const { return candidates_[current_]; }
  // Changes with every layout switch; pass the value read when an execution
  // began to Record.
  uint64_t generation() const { return generation_; }
  bool searching() const { return phase_ == Phase::kSearching; }
  // The rows/second measured for each candidate in the last search (0: not
  // measured), in Candidates() order.
  const std::vector<double>& measured() const { return measured_; }
  // Searches finished so far (each ends with a decision, a change or not).
  uint64_t decisions() const { return decisions_; }

  // An execution that began under `generation` completed at `now` with
  // `rows` rows; `in_system` requests were queued or executing just before
  // it completed (itself included). Returns true when the layout changed.
  bool Record(TimePoint now, uint64_t generation, int64_t rows, double in_system);

 private:
  enum class Phase { kInitial, kSearching, kSettled };

  void StartSearch();
  // Switches to candidate `index`; true if that is a change.
  bool SwitchTo(size_t index);
  // Ends the running trial; true if the layout changed.
  bool EndTrial(TimePoint now);
  void ResetWindow();

  const LayoutTunerOptions options_;
  const std::vector<Layout> candidates_;
  size_t current_ = 0;
  uint64_t generation_ = 0;
  Phase phase_ = Phase::kInitial;

  // Search: candidates in trial order (the previous layout first), the one
  // on trial, and its window.
  std::vector<size_t> order_;
  size_t trial_ = 0;  // index into order_
  size_t previous_ = 0;
  bool window_open_ = false;
  TimePoint window_start_{}, last_completion_{};
  double window_rows_ = 0;
  int window_executions_ = 0;
  double load_sum_ = 0;
  int load_samples_ = 0;
  double search_load_sum_ = 0;
  int search_load_samples_ = 0;
  std::vector<double> measured_;
  uint64_t decisions_ = 0;

  // Settled: the load the decision was made at, and the load since.
  TimePoint decided_at_{};
  double decided_load_ = 0;
  double load_average_ = 0;
  int settled_samples_ = 0;
};

}  // namespace inferd
