#include "scheduler/model_stats.h"

#include <chrono>

namespace inferd {
namespace {

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

void ModelStats::RecordSuccess(uint64_t request_ns, uint64_t queue_ns) {
  success_.Add(request_ns);
  queue_.Add(queue_ns);
  last_inference_ms_.store(NowMs(), std::memory_order_relaxed);
}

void ModelStats::RecordFailure(FailReason reason, uint64_t request_ns) {
  fail_.Add(request_ns);
  switch (reason) {
    case FailReason::kRejected:
      fail_rejected_.fetch_add(1);
      break;
    case FailReason::kCancelled:
      fail_cancelled_.fetch_add(1);
      break;
    case FailReason::kBackend:
      fail_backend_.fetch_add(1);
      break;
    case FailReason::kOther:
      fail_other_.fetch_add(1);
      break;
  }
  last_inference_ms_.store(NowMs(), std::memory_order_relaxed);
}

void ModelStats::RecordExecution(uint64_t batch_size, uint64_t input_ns, uint64_t infer_ns,
                                 uint64_t output_ns) {
  execution_count_.fetch_add(1, std::memory_order_relaxed);
  inference_count_.fetch_add(batch_size, std::memory_order_relaxed);
  compute_input_.Add(input_ns);
  compute_infer_.Add(infer_ns);
  compute_output_.Add(output_ns);
  std::lock_guard<std::mutex> lock(batch_mu_);
  auto& b = batch_stats_[batch_size];
  b.compute_input.count++;
  b.compute_input.ns += input_ns;
  b.compute_infer.count++;
  b.compute_infer.ns += infer_ns;
  b.compute_output.count++;
  b.compute_output.ns += output_ns;
}

ModelStatsSnapshot ModelStats::Snapshot() const {
  ModelStatsSnapshot s;
  s.last_inference_ms = last_inference_ms_.load();
  s.inference_count = inference_count_.load();
  s.execution_count = execution_count_.load();
  s.success = success_.Get();
  s.fail = fail_.Get();
  s.queue = queue_.Get();
  s.compute_input = compute_input_.Get();
  s.compute_infer = compute_infer_.Get();
  s.compute_output = compute_output_.Get();
  s.fail_rejected = fail_rejected_.load();
  s.fail_cancelled = fail_cancelled_.load();
  s.fail_backend = fail_backend_.load();
  s.fail_other = fail_other_.load();
  s.pending = pending_.load();
  std::lock_guard<std::mutex> lock(batch_mu_);
  s.batch_stats = batch_stats_;
  return s;
}

}  // namespace inferd
