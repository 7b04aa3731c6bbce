#include "scheduler/model_stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace inferd {
namespace {

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

uint64_t HistogramSnapshot::Count() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

std::vector<double> StatsHistogramOptions::DefaultLatencyBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,    0.1,    0.25,    0.5,    1,     2.5,    5,     10};
}

void AtomicHistogram::Configure(std::vector<uint64_t> bounds) {
  bounds_ = std::move(bounds);
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
}

HistogramSnapshot AtomicHistogram::Get() const {
  HistogramSnapshot h;
  if (!counts_) return h;
  h.bounds = bounds_;
  h.counts.resize(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    h.counts[i] = counts_[i].load(std::memory_order_relaxed);
  }
  h.sum = sum_.load(std::memory_order_relaxed);
  return h;
}

void ModelStats::ConfigureHistograms(const StatsHistogramOptions& options, int64_t max_batch_size) {
  std::vector<uint64_t> latency_ns;
  for (double s : options.latency_buckets_s) {
    latency_ns.push_back(static_cast<uint64_t>(std::llround(s * 1e9)));
  }
  request_hist_.Configure(latency_ns);
  queue_hist_.Configure(latency_ns);
  compute_infer_hist_.Configure(std::move(latency_ns));
  std::vector<uint64_t> rows = {1};
  while (rows.back() < static_cast<uint64_t>(std::max<int64_t>(1, max_batch_size))) {
    rows.push_back(rows.back() * 2);
  }
  batch_size_hist_.Configure(std::move(rows));
}

void ModelStats::RecordSuccess(uint64_t request_ns, uint64_t queue_ns) {
  success_.Add(request_ns);
  queue_.Add(queue_ns);
  request_hist_.Observe(request_ns);
  queue_hist_.Observe(queue_ns);
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
  compute_infer_hist_.Observe(infer_ns);
  batch_size_hist_.Observe(batch_size);
  MutexLock lock(batch_mu_);
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
  s.cache_hit = cache_hit_.Get();
  s.cache_miss = cache_miss_.Get();
  s.response_cache = response_cache_.load(std::memory_order_relaxed);
  s.fail_rejected = fail_rejected_.load();
  s.fail_cancelled = fail_cancelled_.load();
  s.fail_backend = fail_backend_.load();
  s.fail_other = fail_other_.load();
  s.pending = pending_.load();
  s.inflight = inflight_->load(std::memory_order_relaxed);
  s.batch_target = batch_target_.load(std::memory_order_relaxed);
  s.request_hist = request_hist_.Get();
  s.queue_hist = queue_hist_.Get();
  s.compute_infer_hist = compute_infer_hist_.Get();
  s.batch_size_hist = batch_size_hist_.Get();
  MutexLock lock(batch_mu_);
  s.batch_stats = batch_stats_;
  return s;
}

}  // namespace inferd
