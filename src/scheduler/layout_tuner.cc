#include "scheduler/layout_tuner.h"

#include <algorithm>

namespace inferd {

std::vector<Layout> LayoutTuner::Candidates(int hardware_threads) {
  const int n = std::max(1, hardware_threads);
  std::vector<Layout> out;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) out.push_back(Layout{k, n / k});
  }
  return out;
}

LayoutTuner::LayoutTuner(int hardware_threads, LayoutTunerOptions options)
    : options_(options), candidates_(Candidates(hardware_threads)) {
  measured_.assign(candidates_.size(), 0);
  // One candidate (one hardware thread): nothing to choose.
  if (candidates_.size() == 1) phase_ = Phase::kSettled;
}

void LayoutTuner::ResetWindow() {
  window_open_ = false;
  window_rows_ = 0;
  window_executions_ = 0;
  load_sum_ = 0;
  load_samples_ = 0;
}

bool LayoutTuner::SwitchTo(size_t index) {
  ResetWindow();
  if (index == current_) return false;
  current_ = index;
  ++generation_;
  return true;
}

void LayoutTuner::StartSearch() {
  phase_ = Phase::kSearching;
  previous_ = current_;
  order_.clear();
  order_.push_back(current_);  // measured first: no switch needed
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (i != current_) order_.push_back(i);
  }
  trial_ = 0;
  search_load_sum_ = 0;
  search_load_samples_ = 0;
  std::fill(measured_.begin(), measured_.end(), 0.0);
  ResetWindow();
}

bool LayoutTuner::EndTrial(TimePoint now) {
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  measured_[order_[trial_]] = seconds > 0 ? window_rows_ / seconds : 0;
  search_load_sum_ += load_sum_;
  search_load_samples_ += load_samples_;
  if (++trial_ < order_.size()) return SwitchTo(order_[trial_]);
  // Every candidate measured: the best, unless the previous one is within
  // the margin (a switch must pay for itself).
  size_t best = 0;
  for (size_t i = 1; i < measured_.size(); ++i) {
    if (measured_[i] > measured_[best]) best = i;
  }
  if (measured_[previous_] >= measured_[best] * (1 - options_.keep_margin)) best = previous_;
  phase_ = Phase::kSettled;
  ++decisions_;
  decided_at_ = now;
  decided_load_ = search_load_samples_ > 0 ? search_load_sum_ / search_load_samples_ : 1;
  load_average_ = decided_load_;
  settled_samples_ = 0;
  return SwitchTo(best);
}

bool LayoutTuner::Record(TimePoint now, uint64_t generation, int64_t rows, double in_system) {
  switch (phase_) {
    case Phase::kInitial:
      // The first completion: the model is under load. Measure from here.
      StartSearch();
      break;
    case Phase::kSettled: {
      if (candidates_.size() == 1) return false;
      // An average over roughly the last 16 completions.
      load_average_ += (in_system - load_average_) / 16;
      ++settled_samples_;
      const bool moved = settled_samples_ >= options_.min_settled_samples &&
                         (load_average_ >= decided_load_ * options_.load_change ||
                          load_average_ * options_.load_change <= decided_load_);
      if (moved || now - decided_at_ >= options_.reevaluate) StartSearch();
      return false;
    }
    case Phase::kSearching:
      break;
  }
  if (generation != generation_) return false;  // ran under the previous layout
  if (!window_open_ || now - last_completion_ > options_.idle_gap) {
    // The window opens at a completion, which is not counted: the rows
    // counted are those completed after the start.
    ResetWindow();
    window_open_ = true;
    window_start_ = now;
    last_completion_ = now;
    return false;
  }
  last_completion_ = now;
  window_rows_ += static_cast<double>(std::max<int64_t>(1, rows));
  ++window_executions_;
  load_sum_ += in_system;
  ++load_samples_;
  if (window_executions_ >= options_.min_executions && now - window_start_ >= options_.trial) {
    return EndTrial(now);
  }
  return false;
}

}  // namespace inferd
