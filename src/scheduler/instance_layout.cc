#include "scheduler/instance_layout.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd {

InstanceLayout::InstanceLayout(std::string model, int64_t version, int instances,
                               LayoutTunerOptions options)
    : model_(std::move(model)),
      version_(version),
      instances_(std::max(1, instances)),
      tuner_(instances_, options) {
  Publish(tuner_.current(), tuner_.generation());
}

void InstanceLayout::Publish(Layout layout, uint64_t generation) {
  threads_.store(layout.threads, std::memory_order_relaxed);
  generation_.store(generation, std::memory_order_relaxed);
  active_.store(layout.instances, std::memory_order_release);
}

InstanceLayout::Run InstanceLayout::Begin(int64_t rows) {
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  // Read together with the generation: a switch between the two reads only
  // makes this execution unmeasured (End compares generations).
  Run run;
  run.generation = generation_.load(std::memory_order_relaxed);
  run.threads = threads_.load(std::memory_order_relaxed);
  run.active = active_.load(std::memory_order_relaxed);
  run.rows = rows;
  return run;
}

bool InstanceLayout::End(const Run& run, size_t queued) {
  const int in_flight = in_flight_.fetch_sub(1, std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  const double in_system = static_cast<double>(queued) + std::max(1, in_flight);
  const uint64_t decisions = tuner_.decisions();
  const bool changed = tuner_.Record(now, run.generation, run.rows, in_system);
  const bool decided = tuner_.decisions() != decisions;
  if (!changed && !decided) return false;
  const Layout l = tuner_.current();
  if (changed) Publish(l, tuner_.generation());
  std::ostringstream why;
  if (!decided) {
    why << "trying it";
  } else {
    why << "chose it (rows/s by layout:";
    const auto candidates = LayoutTuner::Candidates(instances_);
    for (size_t i = 0; i < candidates.size(); ++i) {
      why << ' ' << candidates[i].instances << 'x' << candidates[i].threads << '='
          << std::lround(tuner_.measured()[i]);
    }
    why << ')';
  }
  INFERD_LOG(Info) << "model '" << EscapeControl(model_) << "' version " << version_
                   << ": instance layout " << l.instances << " instance(s) x " << l.threads
                   << " thread(s): " << why.str();
  return changed;
}

LayoutState InstanceLayout::state() const {
  return LayoutState{instances_, active_.load(std::memory_order_acquire),
                     threads_.load(std::memory_order_relaxed)};
}

}  // namespace inferd
