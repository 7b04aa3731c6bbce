#include "batcher/batch_queue.h"

#include <algorithm>

#include "middleman/service.h"

namespace inferd::batcher {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<double> CountBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}; }

bool IsCancelled(const QueuedRequest& r) {
  return r.cancelled && r.cancelled->load(std::memory_order_relaxed);
}

bool IsExpired(const QueuedRequest& r, std::chrono::system_clock::time_point now) {
  return r.deadline != std::chrono::system_clock::time_point{} && r.deadline <= now;
}

}  // namespace

BatchQueue::BatchQueue(Upstream upstream, middleman::MetricsRegistry* metrics, int max_in_flight)
    : upstream_(std::move(upstream)),
      max_in_flight_(max_in_flight),
      rows_(metrics->histogram("batcher_batch_rows", "Rows (batch size) per upstream ModelInfer",
                               {}, CountBuckets())),
      requests_(metrics->histogram("batcher_batch_requests",
                                   "Client requests per upstream ModelInfer", {}, CountBuckets())),
      queue_delay_(metrics->histogram("batcher_queue_delay_seconds",
                                      "Time a request waited in the batcher for its batch")),
      timer_([this] { TimerLoop(); }) {}

BatchQueue::~BatchQueue() {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    exiting_ = true;
  }
  wake_.notify_all();
  timer_.join();
}

BatchQueue::Batch BatchQueue::TakeLocked(Keys::iterator k) {
  Batch b = std::move(k->second.open);
  k->second.open = Batch{};
  queued_ -= static_cast<int64_t>(b.requests.size());
  ++k->second.in_flight;
  return b;
}

void BatchQueue::Add(const std::string& key, int64_t max_rows, std::chrono::microseconds max_delay,
                     QueuedRequest r) {
  std::vector<Batch> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto k = keys_.try_emplace(key).first;
    Key& state = k->second;
    if (state.open.rows > 0 && state.open.rows + r.rows > max_rows) {
      ready.push_back(TakeLocked(k));
    }
    const auto now = Clock::now();
    const bool new_batch = state.open.rows == 0;
    if (new_batch) state.open.flush_at = now + max_delay;
    state.open.rows += r.rows;
    state.open.requests.push_back(std::move(r));
    state.open.enqueued.push_back(now);
    ++queued_;
    if (stopped_ || state.open.rows >= max_rows || state.in_flight < max_in_flight_) {
      ready.push_back(TakeLocked(k));
    } else if (new_batch) {
      wake_.notify_one();
    }
  }
  for (Batch& b : ready) SendBatch(std::move(b), key);
}

void BatchQueue::Send(QueuedRequest r) {
  Batch b;
  b.rows = r.rows;
  b.requests.push_back(std::move(r));
  b.enqueued.push_back(Clock::now());
  SendBatch(std::move(b), {});
}

void BatchQueue::Stop() {
  std::vector<std::pair<std::string, Batch>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto k = keys_.begin(); k != keys_.end(); ++k) {
      if (k->second.open.rows > 0) waiting.emplace_back(k->first, TakeLocked(k));
    }
  }
  for (auto& [key, b] : waiting) SendBatch(std::move(b), key);
}

int64_t BatchQueue::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void BatchQueue::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!exiting_) {
    auto next = Clock::time_point::max();
    for (const auto& [key, k] : keys_) {
      if (k.open.rows > 0) next = std::min(next, k.open.flush_at);
    }
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
      continue;
    }
    if (Clock::now() < next) {
      wake_.wait_until(lock, next);
      continue;
    }
    std::vector<std::pair<std::string, Batch>> ready;
    const auto now = Clock::now();
    for (auto k = keys_.begin(); k != keys_.end(); ++k) {
      if (k->second.open.rows > 0 && k->second.open.flush_at <= now) {
        ready.emplace_back(k->first, TakeLocked(k));
      }
    }
    lock.unlock();
    for (auto& [key, b] : ready) SendBatch(std::move(b), key);
    lock.lock();
  }
}

void BatchQueue::CallEnded(const std::string& key) {
  if (key.empty()) return;
  Batch next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto k = keys_.find(key);
    if (k == keys_.end()) return;
    --k->second.in_flight;
    if (k->second.open.rows > 0 && k->second.in_flight < max_in_flight_) {
      next = TakeLocked(k);
    } else if (k->second.open.rows == 0 && k->second.in_flight == 0) {
      keys_.erase(k);
    }
  }
  if (!next.requests.empty()) SendBatch(std::move(next), key);
}

void BatchQueue::SendBatch(Batch batch, const std::string& key) {
  const auto now = Clock::now();
  const auto wall = std::chrono::system_clock::now();
  std::vector<QueuedRequest> live;
  for (size_t i = 0; i < batch.requests.size(); ++i) {
    QueuedRequest& r = batch.requests[i];
    queue_delay_.Observe(std::chrono::duration<double>(now - batch.enqueued[i]).count());
    inference::ModelInferResponse none;
    if (IsCancelled(r)) {
      r.done(::grpc::Status(::grpc::StatusCode::CANCELLED, "the client cancelled the request"),
             none);
    } else if (IsExpired(r, wall)) {
      r.done(::grpc::Status(::grpc::StatusCode::DEADLINE_EXCEEDED,
                            "the request's deadline passed while it waited for its batch"),
             none);
    } else {
      live.push_back(std::move(r));
    }
  }
  if (live.empty()) return CallEnded(key);
  int64_t rows = 0;
  for (const QueuedRequest& r : live) rows += r.rows;
  rows_.Observe(static_cast<double>(rows));
  requests_.Observe(static_cast<double>(live.size()));
  if (live.size() > 1) return SendMerged(std::move(live), key);
  auto r = std::make_shared<QueuedRequest>(std::move(live.front()));
  middleman::CallOptions call;
  call.deadline = r->deadline;
  call.cancelled = r->cancelled;
  upstream_(*r->request, call,
            [this, r, key](const ::grpc::Status& status, inference::ModelInferResponse& response) {
              CallEnded(key);
              r->done(status, response);
            });
}

void BatchQueue::SendMerged(std::vector<QueuedRequest> requests, const std::string& key) {
  std::vector<const inference::ModelInferRequest*> messages;
  middleman::CallOptions call;
  // The latest deadline of the batch (none if a request has none): a caller
  // whose deadline passes only loses its own answer.
  bool unbounded = false;
  for (const QueuedRequest& r : requests) {
    messages.push_back(r.request.get());
    if (r.deadline == std::chrono::system_clock::time_point{}) unbounded = true;
    call.deadline = std::max(call.deadline, r.deadline);
  }
  if (unbounded) call.deadline = {};
  auto merged = Merge(messages, "batcher-" + std::to_string(next_id_.fetch_add(1)));
  auto shared = std::make_shared<std::vector<QueuedRequest>>(std::move(requests));
  if (!merged.ok()) {
    CallEnded(key);
    inference::ModelInferResponse none;
    return Finish(*shared, middleman::ToGrpc(merged.status()), none);
  }
  upstream_(
      std::move(*merged), call,
      [this, shared, key](const ::grpc::Status& status, inference::ModelInferResponse& response) {
        // The next batch goes before this one is split and answered.
        CallEnded(key);
        if (status.error_code() == ::grpc::StatusCode::INVALID_ARGUMENT) {
          for (QueuedRequest& r : *shared) Send(std::move(r));
          return;
        }
        Finish(*shared, status, response);
      });
}

void BatchQueue::Finish(const std::vector<QueuedRequest>& requests, const ::grpc::Status& status,
                        inference::ModelInferResponse& response) {
  if (!status.ok()) {
    for (const QueuedRequest& r : requests) r.done(status, response);
    return;
  }
  std::vector<Part> parts;
  parts.reserve(requests.size());
  for (const QueuedRequest& r : requests) parts.push_back({r.request->id(), r.rows});
  auto answers = Split(response, parts);
  if (!answers.ok()) {
    const ::grpc::Status internal(
        ::grpc::StatusCode::INTERNAL,
        "the upstream's batched answer does not split: " + answers.status().message());
    for (const QueuedRequest& r : requests) r.done(internal, response);
    return;
  }
  for (size_t i = 0; i < requests.size(); ++i) requests[i].done(status, (*answers)[i]);
}

}  // namespace inferd::batcher
