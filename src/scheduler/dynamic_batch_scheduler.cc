#include "scheduler/dynamic_batch_scheduler.h"

#include <algorithm>

#include "core/cpu_affinity.h"

namespace inferd {
namespace {

int64_t RowsOf(const std::vector<std::unique_ptr<PendingRequest>>& batch) {
  int64_t rows = 0;
  for (const auto& p : batch) rows += p->rows;
  return rows;
}

// Answers the requests that expired in the queue or that their client
// cancelled (called without the scheduler's lock), and empties `failed`.
void FailExpired(const BatchContext& ctx,
                 std::vector<std::pair<std::unique_ptr<PendingRequest>, FailReason>>& failed) {
  if (ctx.stats) ctx.stats->AddPending(-static_cast<int64_t>(failed.size()));
  for (auto& [p, reason] : failed) {
    FailPending(ctx, *p, reason,
                reason == FailReason::kCancelled
                    ? Cancelled("request cancelled by the client before it ran")
                    : Unavailable("Request timeout expired"));
  }
  failed.clear();
}

}  // namespace

std::string BatchSignature(const InferRequest& request, bool batching) {
  std::string sig;
  std::vector<const InferInput*> inputs;
  for (const auto& in : request.inputs) inputs.push_back(&in);
  std::sort(inputs.begin(), inputs.end(),
            [](const InferInput* a, const InferInput* b) { return a->name < b->name; });
  for (const InferInput* in : inputs) {
    sig += in->name;
    sig += ':';
    sig += std::to_string(static_cast<int>(in->datatype));
    for (size_t i = batching ? 1 : 0; i < in->shape.size(); ++i) {
      sig += ',';
      sig += std::to_string(in->shape[i]);
    }
    sig += ';';
  }
  return sig;
}

DynamicBatchScheduler::DynamicBatchScheduler(
    ModelIdentity model, const SchedulerConfig& config,
    std::vector<std::unique_ptr<BackendInstance>> instances, ModelStats* stats, Clock* clock,
    RateLimitRegistration limits)
    : ctx_{std::move(model), stats, clock},
      instances_(std::move(instances)),
      inline_max_exec_ns_(
          config.kind == SchedulerConfig::Kind::kNone ? config.inline_max_exec_us * 1000 : 0) {
  policy_.batching = config.kind == SchedulerConfig::Kind::kDynamic && config.max_batch_size > 0;
  policy_.max_batch_size = std::max<int64_t>(1, config.max_batch_size);
  if (config.kind == SchedulerConfig::Kind::kDynamic) {
    config_ = config.dynamic;
    policy_.preferred_batch_sizes = config_.preferred_batch_sizes;
    std::sort(policy_.preferred_batch_sizes.begin(), policy_.preferred_batch_sizes.end());
    policy_.max_queue_delay = std::chrono::microseconds(config_.max_queue_delay_us);
  }
  const uint64_t levels = std::max<uint64_t>(1, config_.priority_levels);
  for (uint64_t l = 1; l <= levels; ++l) {
    auto it = config_.priority_policies.find(l);
    levels_[l].policy = it != config_.priority_policies.end() ? it->second : config_.default_policy;
  }
  if (config_.preserve_ordering) ordering_ = std::make_shared<ResponseOrder>();
  if (policy_.batching && config_.adaptive) {
    adaptive_ = std::make_unique<AdaptiveBatcher>(instances_.size(), policy_.max_batch_size, stats);
  }
  limits_ = std::move(limits);
  layout_ = config.layout;
  slots_.resize(instances_.size());
  for (size_t i = 0; i < instances_.size(); ++i) {
    threads_.emplace_back([this, i, start = config.instance_start] {
      StartInstanceThread(ctx_.model.name, i);  // --cpu-set (core/cpu_affinity.h)
      if (start) start(i, *instances_[i]);      // model warmup, on the thread requests run on
      InstanceLoop(i);
    });
  }
}

DynamicBatchScheduler::~DynamicBatchScheduler() { Stop(); }

void DynamicBatchScheduler::Enqueue(std::unique_ptr<PendingRequest> pending) {
  const InferRequest& req = *pending->request;
  pending->arrival = ctx_.clock->Now();
  pending->rows = policy_.batching ? std::max<int64_t>(1, req.batch_size) : 1;
  if (policy_.batching) pending->batch_signature = BatchSignature(req, true);

  MutexLock lock(mu_);
  Status reject;
  uint64_t level = req.priority;
  if (level == 0 || level > levels_.size()) {
    level = config_.default_priority_level == 0 ? levels_.size() / 2 + levels_.size() % 2
                                                : config_.default_priority_level;
    level = std::clamp<uint64_t>(level, 1, levels_.size());
  }
  Level& lv = levels_[level];
  if (stopping_) {
    reject = Unavailable("model '" + ctx_.model.name + "' version " +
                         std::to_string(ctx_.model.version) + " is unloading");
  } else if (lv.policy.max_queue_size > 0 && lv.queue.size() >= lv.policy.max_queue_size) {
    reject =
        Unavailable("Exceeds maximum queue size of " + std::to_string(lv.policy.max_queue_size) +
                    " for model '" + ctx_.model.name + "'");
  }
  // Numbered under the lock, so the buffer's order is the arrival order;
  // a rejection keeps its place too.
  if (ordering_) pending->sink = ordering_->Wrap(std::move(pending->sink));
  if (!reject.ok()) {
    lock.Unlock();
    FailPending(ctx_, *pending, FailReason::kRejected, reject);
    return;
  }
  uint64_t timeout_us = lv.policy.default_timeout_us;
  if (lv.policy.allow_timeout_override && req.timeout_us > 0) {
    timeout_us = timeout_us == 0 ? req.timeout_us : std::min(timeout_us, req.timeout_us);
  }
  if (timeout_us > 0) pending->deadline = pending->arrival + std::chrono::microseconds(timeout_us);
  if (const int slot = LendIdleInstanceLocked(); slot >= 0) {
    lock.Unlock();
    RunInline(static_cast<size_t>(slot), std::move(pending));
    return;
  }
  if (ctx_.stats) ctx_.stats->AddPending(1);
  if (adaptive_) adaptive_->OnArrival(pending->arrival, pending->rows, EmptyLocked());
  lv.queue.push_back(std::move(pending));
  // A lent instance's thread ignores wake-ups: make sure a free one hears.
  const bool any_lent = inline_runs_ > 0;
  lock.Unlock();
  any_lent ? cv_.NotifyAll() : cv_.NotifyOne();
}

int DynamicBatchScheduler::LendIdleInstanceLocked() {
  if (inline_max_exec_ns_ == 0 || !EmptyLocked() ||
      avg_exec_ns_.load(std::memory_order_relaxed) > inline_max_exec_ns_) {
    return -1;
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    // A rate-limited instance runs only through the limiter, on its thread.
    if (slots_[i].idle && !slots_[i].lent && !limits_.limited(i) && !InactiveLocked(i)) {
      slots_[i].lent = true;
      ++inline_runs_;
      return static_cast<int>(i);
    }
  }
  return -1;
}

void DynamicBatchScheduler::RunInline(size_t index, std::unique_ptr<PendingRequest> pending) {
  std::vector<std::unique_ptr<PendingRequest>> batch;
  batch.push_back(std::move(pending));
  const auto start = std::chrono::steady_clock::now();
  const auto run = layout_ ? layout_->Begin(1) : InstanceLayout::Run{};
  RunBatch(ctx_, *instances_[index], batch, run.threads, static_cast<int>(index));
  RecordExecution(std::chrono::steady_clock::now() - start);
  bool wake = false;
  {
    MutexLock lock(mu_);
    if (layout_) LayoutEndLocked(run);
    slots_[index].lent = false;
    --inline_runs_;
    // Only Stop, or requests queued meanwhile, need a thread to look again.
    // Waking every instance thread after each inline run (one request at a
    // time, the case inline execution is for) cost a futex wake-up and a
    // context switch per request for nothing.
    wake = stopping_ || !EmptyLocked();
  }
  if (wake) cv_.NotifyAll();
}

void DynamicBatchScheduler::RecordExecution(std::chrono::steady_clock::duration d) {
  const auto ns = static_cast<uint64_t>(
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()));
  uint64_t avg = avg_exec_ns_.load(std::memory_order_relaxed);
  // A racy update is fine: this only steers where requests run.
  avg_exec_ns_.store(avg == UINT64_MAX ? ns : avg - avg / 8 + ns / 8, std::memory_order_relaxed);
}

void DynamicBatchScheduler::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  layout_cv_.NotifyAll();
  // A thread waiting for the limiter looks at its queue again (and waits
  // again only if requests remain to drain).
  limits_.InterruptAll();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  {
    // Inline runs use the instances too: wait until the last one returns.
    MutexLock lock(mu_);
    while (inline_runs_ != 0) cv_.Wait(lock);
  }
  limits_.Reset();
}

void DynamicBatchScheduler::LayoutEndLocked(const InstanceLayout::Run& run) {
  // Under mu_: an instance thread checks its layout state under mu_ too, so
  // none can miss the change between its check and its wait.
  if (!layout_->End(run, QueuedLocked())) return;
  cv_.NotifyAll();         // instances left out move to layout_cv_
  layout_cv_.NotifyAll();  // newly active ones come back
}

size_t DynamicBatchScheduler::QueuedLocked() const {
  size_t n = delayed_.size();
  for (const auto& [l, lv] : levels_) n += lv.queue.size();
  return n;
}

bool DynamicBatchScheduler::EmptyLocked() const {
  if (!delayed_.empty()) return false;
  for (const auto& [l, lv] : levels_) {
    if (!lv.queue.empty()) return false;
  }
  return true;
}

void DynamicBatchScheduler::SweepLocked(std::deque<std::unique_ptr<PendingRequest>>& q,
                                        const QueuePolicy* policy, Clock::TimePoint now,
                                        Failed& failed) {
  for (auto it = q.begin(); it != q.end();) {
    PendingRequest& p = **it;
    if (p.request->IsCancelled()) {
      failed.emplace_back(std::move(*it), FailReason::kCancelled);
      it = q.erase(it);
    } else if (policy && now >= p.deadline) {
      if (policy->delay_on_timeout) {
        p.deadline = Clock::TimePoint::max();
        p.delayed = true;
        delayed_.push_back(std::move(*it));
      } else {
        failed.emplace_back(std::move(*it), FailReason::kRejected);
      }
      it = q.erase(it);
    } else {
      ++it;
    }
  }
}

void DynamicBatchScheduler::ExpireLocked(Clock::TimePoint now, Failed& failed) {
  for (auto& [l, lv] : levels_) SweepLocked(lv.queue, &lv.policy, now, failed);
  SweepLocked(delayed_, nullptr, now, failed);
}

void DynamicBatchScheduler::TakeLocked(size_t take,
                                       std::vector<std::unique_ptr<PendingRequest>>& batch) {
  for (auto& [l, lv] : levels_) {
    while (batch.size() < take && !lv.queue.empty()) {
      batch.push_back(std::move(lv.queue.front()));
      lv.queue.pop_front();
    }
  }
  while (batch.size() < take && !delayed_.empty()) {
    batch.push_back(std::move(delayed_.front()));
    delayed_.pop_front();
  }
  if (ctx_.stats) ctx_.stats->AddPending(-static_cast<int64_t>(batch.size()));
}

Clock::TimePoint DynamicBatchScheduler::ViewLocked(std::vector<BatchCandidate>& view) const {
  view.clear();
  Clock::TimePoint next_deadline = Clock::TimePoint::max();
  for (const auto& [l, lv] : levels_) {
    for (const auto& p : lv.queue) {
      view.push_back(BatchCandidate{p->batch_signature, p->rows, p->arrival});
      next_deadline = std::min(next_deadline, p->deadline);
    }
  }
  for (const auto& p : delayed_) {
    view.push_back(BatchCandidate{p->batch_signature, p->rows, p->arrival});
  }
  return next_deadline;
}

void DynamicBatchScheduler::InstanceLoop(size_t index) {
  BackendInstance& instance = *instances_[index];
  RateLimitGate gate(limits_.limiter(), limits_.id(index));
  std::vector<std::unique_ptr<PendingRequest>> batch;
  Failed failed;
  std::vector<BatchCandidate> view;
  int pinned_active = 0;  // the layout this thread's CPUs follow (0: none yet)
  MutexLock lock(mu_);
  for (;;) {
    if (slots_[index].lent) {  // a caller runs a request on this instance
      cv_.Wait(lock);
      continue;
    }
    if (InactiveLocked(index)) {  // the layout leaves it out
      layout_cv_.Wait(lock);
      continue;
    }
    const auto now = ctx_.clock->Now();
    ExpireLocked(now, failed);
    if (!failed.empty()) {
      lock.Unlock();
      FailExpired(ctx_, failed);
      lock.Lock();
      continue;
    }
    if (EmptyLocked()) {
      gate.Drop();
      if (stopping_) return;
      slots_[index].idle = true;
      ctx_.clock->WaitUntil(lock.native(), cv_.native(), Clock::TimePoint::max());
      slots_[index].idle = false;
      continue;
    }
    const Clock::TimePoint next_deadline = ViewLocked(view);
    BatchPolicy policy = policy_;
    if (adaptive_) adaptive_->Apply(index, view, now, policy);
    if (stopping_) policy.max_queue_delay = std::chrono::microseconds(0);  // drain now
    const BatchDecision d = DecideBatch(policy, view, now);
    if (d.take == 0) {
      gate.Drop();  // hold no resources while a batch fills
      ctx_.clock->WaitUntil(lock.native(), cv_.native(), std::min(d.wake_at, next_deadline));
      continue;
    }
    if (gate.limited() && !gate.held()) {
      // Wait for the resources without the lock, then look again: another
      // instance may have taken the work meanwhile.
      lock.Unlock();
      gate.Acquire();
      lock.Lock();
      continue;
    }
    TakeLocked(d.take, batch);
    const int64_t rows = RowsOf(batch);
    if (adaptive_) adaptive_->Start(index, rows);
    // The thread hint of the layout this instance was active in (changes are made under mu_).
    const auto run = layout_ ? layout_->Begin(rows) : InstanceLayout::Run{};
    const bool more = !EmptyLocked();
    const bool any_lent = inline_runs_ > 0;
    lock.Unlock();
    if (more) any_lent ? cv_.NotifyAll() : cv_.NotifyOne();  // a free instance takes the rest
    if (layout_ && run.active != pinned_active) {
      // Its own slice of --cpu-set under this layout (core/cpu_affinity.h).
      PinInstanceSlice(ctx_.model.name, index, run.active);
      pinned_active = run.active;
    }
    const auto start = std::chrono::steady_clock::now();
    RunBatch(ctx_, instance, batch, run.threads, static_cast<int>(index));
    const auto took = std::chrono::steady_clock::now() - start;
    if (inline_max_exec_ns_ > 0) RecordExecution(took);
    lock.Lock();
    if (adaptive_) adaptive_->Record(index, rows, took, ctx_.clock->Now());
    if (layout_) LayoutEndLocked(run);
    gate.Done(!EmptyLocked());
  }
}

}  // namespace inferd
