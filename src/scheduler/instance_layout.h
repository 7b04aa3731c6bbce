// InstanceLayout: the automatic instance and thread layout of one model
// version (docs/instance_layout.md). The model has N instances (N = the
// hardware threads, capped); the layout says how many of them take batches
// (the first k) and how many CPU threads each execution gets (N/k, handed to
// the backend as ExecutionItem::cpu_threads, ABI v3 request_cpu_threads).
// The choice is LayoutTuner's, fed with every completed execution; each
// change is logged.
//
// Used by DynamicBatchScheduler (a few hooks: Active, Begin, End) and read by
// the metrics and the repository index (state()).
//
// Threading: Active and state are lock-free; Begin/End from any instance
// thread (End serialises on an internal mutex). No errors.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "scheduler/layout_tuner.h"

namespace inferd {

// What the metrics and the index show.
struct LayoutState {
  int instances = 0;  // created (N)
  int active = 0;     // taking batches (k)
  int threads = 0;    // CPU threads per execution (N/k)
};

class InstanceLayout {
 public:
  // `instances`: N, the instances the model has (>= 1).
  InstanceLayout(std::string model, int64_t version, int instances,
                 LayoutTunerOptions options = {});

  // One execution, between Begin and End.
  struct Run {
    uint64_t generation = 0;
    int threads = 0;  // the hint for this execution
    int active = 0;   // instances taking batches when it began
    int64_t rows = 0;
  };

  // Whether instance `index` (0-based) takes batches under the current layout.
  bool Active(size_t index) const {
    return index < static_cast<size_t>(active_.load(std::memory_order_acquire));
  }
  // Before an execution of `rows` rows.
  Run Begin(int64_t rows);
  // After it, with `queued` requests waiting in the queue. True when the
  // layout changed: the caller wakes its instance threads.
  bool End(const Run& run, size_t queued);

  LayoutState state() const;

 private:
  void Publish(Layout layout, uint64_t generation);

  const std::string model_;
  const int64_t version_;
  const int instances_;
  std::atomic<int> active_{1};
  std::atomic<int> threads_{1};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> in_flight_{0};
  mutable std::mutex mu_;
  LayoutTuner tuner_;  // guarded by mu_
};

}  // namespace inferd
