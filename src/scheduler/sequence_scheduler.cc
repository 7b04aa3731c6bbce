#include "scheduler/sequence_scheduler.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/bytes_tensor.h"
#include "core/cpu_affinity.h"

namespace inferd {

SequenceScheduler::SequenceScheduler(ModelIdentity model, const SchedulerConfig& config,
                                     std::vector<std::unique_ptr<BackendInstance>> instances,
                                     ModelStats* stats, Clock* clock, RateLimitRegistration limits)
    : ctx_{std::move(model), stats, clock},
      config_(config),
      instances_(std::move(instances)),
      limits_(std::move(limits)) {
  policy_.batching = config.max_batch_size > 0;
  policy_.max_batch_size = std::max<int64_t>(1, config.max_batch_size);
  policy_.max_queue_delay = std::chrono::microseconds(config.sequence.max_queue_delay_us);
  if (config.sequence.oldest) {
    policy_.preferred_batch_sizes = config.sequence.preferred_batch_sizes;
    std::sort(policy_.preferred_batch_sizes.begin(), policy_.preferred_batch_sizes.end());
  }
  for (const auto& c : config_.sequence.controls) {
    if (c.kind == ControlKind::kCorrelationId) corrid_ = &c;
  }
  if (!config.sequence.states.empty()) {
    states_ = std::make_shared<const std::vector<SequenceStateConfig>>(config.sequence.states);
  }
  slots_.resize(instances_.size());
  for (size_t i = 0; i < instances_.size(); ++i) {
    threads_.emplace_back([this, i, start = config.instance_start] {
      StartInstanceThread(ctx_.model.name, i);  // --cpu-set (core/cpu_affinity.h)
      if (start) start(i, *instances_[i]);      // model warmup, on the thread requests run on
      InstanceLoop(i);
    });
  }
}

SequenceScheduler::~SequenceScheduler() { Stop(); }

std::string SequenceScheduler::Key(const CorrelationId& id) {
  if (const auto* u = std::get_if<uint64_t>(&id)) return "u" + std::to_string(*u);
  if (const auto* s = std::get_if<std::string>(&id)) return "s" + *s;
  return "";
}

Status SequenceScheduler::AddControlInputs(InferRequest& req, bool start, bool end) const {
  const Shape shape = config_.max_batch_size > 0 ? Shape{1, 1} : Shape{1};
  for (const auto& c : config_.sequence.controls) {
    InferInput in;
    in.name = c.input_name;
    in.datatype = c.datatype;
    in.shape = shape;
    if (c.kind == ControlKind::kCorrelationId) {
      if (c.datatype == DataType::kBytes) {
        std::string element;
        AppendBytesElement(element, std::get<std::string>(req.correlation_id));
        char* buf = req.Allocate(element.size());
        std::memcpy(buf, element.data(), element.size());
        in.data = BufferView{buf, element.size()};
      } else {
        const uint64_t id = std::get<uint64_t>(req.correlation_id);
        const size_t size = DataTypeByteSize(c.datatype);
        char* buf = req.Allocate(size);
        if (c.datatype == DataType::kInt32 || c.datatype == DataType::kUint32) {
          const uint32_t v = static_cast<uint32_t>(id);  // 32-bit types truncate the id
          std::memcpy(buf, &v, 4);
        } else {
          std::memcpy(buf, &id, 8);
        }
        in.data = BufferView{buf, size};
      }
    } else {
      const bool on = c.kind == ControlKind::kStart ? start
                      : c.kind == ControlKind::kEnd ? end
                                                    : true;  // READY: this row holds a request
      const double v = on ? c.true_value : c.false_value;
      const size_t size = DataTypeByteSize(c.datatype);
      char* buf = req.Allocate(size);
      if (c.datatype == DataType::kInt32) {
        const int32_t x = static_cast<int32_t>(v);
        std::memcpy(buf, &x, 4);
      } else if (c.datatype == DataType::kFp32) {
        const float x = static_cast<float>(v);
        std::memcpy(buf, &x, 4);
      } else {
        buf[0] = v != 0 ? 1 : 0;
      }
      in.data = BufferView{buf, size};
    }
    req.inputs.push_back(std::move(in));
  }
  return Status::Ok();
}

void SequenceScheduler::ReleaseIdleLocked(Clock::TimePoint now) {
  const auto idle = std::chrono::microseconds(config_.sequence.max_sequence_idle_us);
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    if (now - it->second.last_seen >= idle) {
      slots_[it->second.slot].live_sequences--;
      it = sequences_.erase(it);
    } else {
      ++it;
    }
  }
}

void SequenceScheduler::Enqueue(std::unique_ptr<PendingRequest> pending) {
  InferRequest& req = *pending->request;
  const auto now = ctx_.clock->Now();
  pending->arrival = now;
  pending->rows = policy_.batching ? std::max<int64_t>(1, req.batch_size) : 1;
  const std::string model = "'" + ctx_.model.name + "'";
  auto reject = [&](const Status& s) { FailPending(ctx_, *pending, FailReason::kOther, s); };

  if (std::holds_alternative<std::monostate>(req.correlation_id)) {
    return reject(InvalidArgument("inference request to model " + model +
                                  " must specify a non-zero or non-empty correlation ID "
                                  "(parameter 'sequence_id')"));
  }
  const bool is_string = std::holds_alternative<std::string>(req.correlation_id);
  if (corrid_ != nullptr && is_string != (corrid_->datatype == DataType::kBytes)) {
    return reject(
        InvalidArgument("sequence batching control '" + corrid_->input_name + "' data-type is '" +
                        (is_string ? "BYTES" : "UINT64") + "', but model " + model + " expects '" +
                        std::string(DataTypeToProtocol(corrid_->datatype)) + "' (send " +
                        (is_string ? "an unsigned integer" : "a string") + " sequence_id)"));
  }
  const std::string key = Key(req.correlation_id);
  MutexLock lock(mu_);
  if (stopping_) {
    lock.Unlock();
    return reject(Unavailable("model " + model + " is unloading"));
  }
  ReleaseIdleLocked(now);
  auto it = sequences_.find(key);
  if (req.sequence_start) {
    if (it != sequences_.end()) {  // a new START restarts the sequence in place
      it->second.last_seen = now;
    } else {
      size_t best = 0;
      for (size_t i = 1; i < slots_.size(); ++i) {
        if (slots_[i].live_sequences < slots_[best].live_sequences) best = i;
      }
      slots_[best].live_sequences++;
      it = sequences_.emplace(key, SequenceState{best, now, nullptr}).first;
    }
    if (states_) it->second.store = std::make_shared<SequenceStateStore>(states_, policy_.batching);
  } else if (it == sequences_.end()) {
    lock.Unlock();
    return reject(InvalidArgument(
        "inference request for sequence " + key.substr(1) + " to model " + model +
        " must specify the START flag on the first request of the sequence (the sequence is "
        "unknown, has ended, or was released after being idle)"));
  } else {
    it->second.last_seen = now;
  }
  const size_t slot = it->second.slot;
  if (states_) AttachSequenceState(*pending, *states_, it->second.store);
  if (req.sequence_end) {
    slots_[slot].live_sequences--;
    sequences_.erase(it);
  }
  AddControlInputs(req, req.sequence_start, req.sequence_end);
  pending->batch_signature = key;  // used to keep one request per sequence per batch
  if (ctx_.stats) ctx_.stats->AddPending(1);
  slots_[slot].queue.push_back(std::move(pending));
  lock.Unlock();
  cv_.NotifyAll();
}

void SequenceScheduler::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  limits_.InterruptAll();  // a thread waiting for the limiter looks again
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  limits_.Reset();
}

void SequenceScheduler::TakeCancelledLocked(
    std::deque<std::unique_ptr<PendingRequest>>& queue,
    std::vector<std::unique_ptr<PendingRequest>>& cancelled) {
  for (auto it = queue.begin(); it != queue.end();) {
    if ((*it)->request->IsCancelled()) {
      cancelled.push_back(std::move(*it));
      it = queue.erase(it);
    } else {
      ++it;
    }
  }
  if (!cancelled.empty() && ctx_.stats) {
    ctx_.stats->AddPending(-static_cast<int64_t>(cancelled.size()));
  }
}

void SequenceScheduler::InstanceLoop(size_t index) {
  std::vector<std::unique_ptr<PendingRequest>> batch, cancelled;
  std::vector<BatchCandidate> view;
  std::vector<size_t> positions;
  RateLimitGate gate(limits_.limiter(), limits_.id(index));
  MutexLock lock(mu_);
  auto& queue = slots_[index].queue;
  for (;;) {
    // Cancelled requests leave the queue without running.
    TakeCancelledLocked(queue, cancelled);
    if (!cancelled.empty()) {
      lock.Unlock();
      for (auto& p : cancelled) {
        FailPending(ctx_, *p, FailReason::kCancelled,
                    Cancelled("request cancelled by the client before it ran"));
      }
      cancelled.clear();
      lock.Lock();
      continue;
    }
    if (queue.empty()) {
      gate.Drop();
      if (stopping_) return;
      ctx_.clock->WaitUntil(lock.native(), cv_.native(), Clock::TimePoint::max());
      continue;
    }
    // Candidates: the oldest waiting request of each sequence, in queue order.
    view.clear();
    positions.clear();
    std::set<std::string_view> seen;
    for (size_t i = 0; i < queue.size(); ++i) {
      if (!seen.insert(queue[i]->batch_signature).second) continue;
      // Every candidate batches with every other: give them one signature.
      view.push_back(BatchCandidate{"", queue[i]->rows, queue[i]->arrival});
      positions.push_back(i);
    }
    BatchPolicy policy = policy_;
    if (stopping_) policy.max_queue_delay = std::chrono::microseconds(0);
    const BatchDecision d = DecideBatch(policy, view, ctx_.clock->Now());
    if (d.take == 0) {
      gate.Drop();  // hold no resources while a batch fills
      ctx_.clock->WaitUntil(lock.native(), cv_.native(), d.wake_at);
      continue;
    }
    if (gate.limited() && !gate.held()) {
      lock.Unlock();  // wait for the resources, then look again
      gate.Acquire();
      lock.Lock();
      continue;
    }
    for (size_t k = 0; k < d.take; ++k) batch.push_back(std::move(queue[positions[k]]));
    std::erase_if(queue, [](const std::unique_ptr<PendingRequest>& p) { return p == nullptr; });
    if (ctx_.stats) ctx_.stats->AddPending(-static_cast<int64_t>(batch.size()));
    lock.Unlock();
    if (states_) {
      // The state is read now, not at Enqueue: the previous request of the
      // sequence has answered only now.
      for (auto& p : batch) {
        auto* sink = static_cast<StateCaptureSink*>(p->sink.get());
        sink->store().AddInputs(*p->request, p->request->sequence_start);
      }
    }
    RunBatch(ctx_, *instances_[index], batch, 0, static_cast<int>(index));
    lock.Lock();
    gate.Done(!queue.empty());
  }
}

}  // namespace inferd
