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

BatchQueue::BatchQueue(Upstream upstream, middleman::MetricsRegistry* metrics)
    : upstream_(std::move(upstream)),
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

void BatchQueue::Add(const std::string& key, int64_t max_rows, std::chrono::microseconds max_delay,
                     QueuedRequest r) {
  std::vector<Batch> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      ready.emplace_back();
      ready.back().requests.push_back(std::move(r));
      ready.back().enqueued.push_back(Clock::now());
    } else {
      auto it = open_.find(key);
      if (it != open_.end() && it->second.rows + r.rows > max_rows) {
        queued_ -= static_cast<int64_t>(it->second.requests.size());
        ready.push_back(std::move(it->second));
        open_.erase(it);
        it = open_.end();
      }
      const auto now = Clock::now();
      bool new_batch = false;
      if (it == open_.end()) {
        it = open_.try_emplace(key).first;
        it->second.flush_at = now + max_delay;
        new_batch = true;
      }
      Batch& b = it->second;
      b.rows += r.rows;
      b.requests.push_back(std::move(r));
      b.enqueued.push_back(now);
      ++queued_;
      if (b.rows >= max_rows) {
        queued_ -= static_cast<int64_t>(b.requests.size());
        ready.push_back(std::move(b));
        open_.erase(it);
      } else if (new_batch) {
        wake_.notify_one();
      }
    }
  }
  for (Batch& b : ready) SendBatch(std::move(b));
}

void BatchQueue::Send(QueuedRequest r) {
  Batch b;
  b.rows = r.rows;
  b.requests.push_back(std::move(r));
  b.enqueued.push_back(Clock::now());
  SendBatch(std::move(b));
}

void BatchQueue::Stop() {
  std::map<std::string, Batch> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    waiting.swap(open_);
    queued_ = 0;
  }
  for (auto& [key, b] : waiting) SendBatch(std::move(b));
}

int64_t BatchQueue::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void BatchQueue::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!exiting_) {
    auto next = Clock::time_point::max();
    for (const auto& [key, b] : open_) next = std::min(next, b.flush_at);
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
      continue;
    }
    if (Clock::now() < next) {
      wake_.wait_until(lock, next);
      continue;
    }
    std::vector<Batch> ready;
    const auto now = Clock::now();
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->second.flush_at <= now) {
        queued_ -= static_cast<int64_t>(it->second.requests.size());
        ready.push_back(std::move(it->second));
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (Batch& b : ready) SendBatch(std::move(b));
    lock.lock();
  }
}

void BatchQueue::SendBatch(Batch batch) {
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
  if (live.empty()) return;
  int64_t rows = 0;
  for (const QueuedRequest& r : live) rows += r.rows;
  rows_.Observe(static_cast<double>(rows));
  requests_.Observe(static_cast<double>(live.size()));
  if (live.size() > 1) return SendMerged(std::move(live));
  auto r = std::make_shared<QueuedRequest>(std::move(live.front()));
  middleman::CallOptions call;
  call.deadline = r->deadline;
  call.cancelled = r->cancelled;
  upstream_(*r->request, call,
            [r](const ::grpc::Status& status, inference::ModelInferResponse& response) {
              r->done(status, response);
            });
}

void BatchQueue::SendMerged(std::vector<QueuedRequest> requests) {
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
    inference::ModelInferResponse none;
    return Finish(*shared, middleman::ToGrpc(merged.status()), none);
  }
  upstream_(std::move(*merged), call,
            [this, shared](const ::grpc::Status& status, inference::ModelInferResponse& response) {
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
