// BatchQueue: collects requests of one merge key (merge.h) into batches and
// sends each batch upstream as one ModelInfer call, then answers every
// request of the batch from its slice of the answer.
//
// A batch is sent when its rows reach its `max_rows`, when its oldest
// request has waited `max_delay` (one timer thread for every key, no thread
// per model), or as soon as fewer than `max_in_flight` upstream calls of its
// key are in flight: a request that finds its key idle goes at once, and the
// requests that arrive while the key's calls run wait for the first of them
// to finish, so the batch grows with the load and a lone request pays no
// delay (inferd's dynamic batcher does the same with an idle instance).
// `max_in_flight` 0: batches wait for `max_rows` or `max_delay` only. A
// request that does not fit the room left starts the next batch. At send time the requests already
// cancelled or past their deadline are answered CANCELLED / DEADLINE_EXCEEDED and left out; a batch
// of one request sends that request unchanged (its id, its cancellation flag), so its answer is
// inferd's own. The upstream call of a merged batch carries the latest deadline of its requests
// (none if one has none: the upstream's default timeout) and no cancellation: a caller that cancels
// or whose deadline passes after the send only loses its own answer.
//
// Errors: an upstream error answers every request of the batch with that
// status, code and message as inferd sent them, except INVALID_ARGUMENT on
// a merged batch: its requests are then sent again one by one, so that each
// caller gets inferd's answer to its own request (a bad request cannot fail
// the good ones it was merged with, and its error text names its own
// shape). An answer that does not split (merge.h Split) is INTERNAL for
// every request of the batch.
//
// Threading: Add, Send and Stop from any thread. `done` callbacks and the
// upstream function run on the caller's thread, the timer thread or the
// upstream's completion threads, never under the queue's lock; they must not
// block. The destructor stops the timer after sending what waits.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "batcher/merge.h"
#include "grpc_service.pb.h"
#include "middleman/inferd_pool.h"
#include "middleman/metrics_registry.h"

namespace inferd::batcher {

// The answer to one caller: its status and, when OK, its response.
using Answer = std::function<void(const ::grpc::Status&, inference::ModelInferResponse&)>;

struct QueuedRequest {
  // Alive until `done` has run (a gRPC request aliases the call's message).
  std::shared_ptr<const inference::ModelInferRequest> request;
  int64_t rows = 1;
  // The caller's deadline; zero: none.
  std::chrono::system_clock::time_point deadline{};
  std::shared_ptr<const std::atomic<bool>> cancelled;  // may be null
  Answer done;
};

// Sends one ModelInfer upstream; `done` runs once.
using Upstream = std::function<void(inference::ModelInferRequest request,
                                    const middleman::CallOptions& call, Answer done)>;

class BatchQueue {
 public:
  // `metrics` (not owned) gets the batcher_* batch families;
  // `max_in_flight`: upstream calls per key before batches wait (above).
  BatchQueue(Upstream upstream, middleman::MetricsRegistry* metrics, int max_in_flight);
  ~BatchQueue();
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  // Queues `r` under `key` for a batch of at most `max_rows` rows that waits
  // at most `max_delay` for more (after Stop: sent at once).
  void Add(const std::string& key, int64_t max_rows, std::chrono::microseconds max_delay,
           QueuedRequest r);
  // Sends `r` on its own, at once (a request that passes through).
  void Send(QueuedRequest r);
  // Sends every waiting batch now; later Adds are sent at once.
  void Stop();
  // Requests waiting in batches now.
  int64_t queued() const;

 private:
  struct Batch {
    std::vector<QueuedRequest> requests;
    std::vector<std::chrono::steady_clock::time_point> enqueued;
    int64_t rows = 0;
    std::chrono::steady_clock::time_point flush_at{};
  };
  // One merge key: its open batch (when `open.rows` > 0) and its upstream
  // calls in flight. Erased when both are zero.
  struct Key {
    Batch open;
    int in_flight = 0;
  };
  using Keys = std::map<std::string, Key>;
  // Takes `k`'s open batch for sending (counting the call) under mu_.
  Batch TakeLocked(Keys::iterator k);
  // `key` empty: a pass-through, not counted.
  void SendBatch(Batch batch, const std::string& key);
  void SendMerged(std::vector<QueuedRequest> requests, const std::string& key);
  // `key`'s call has ended: sends its open batch if the key may now.
  void CallEnded(const std::string& key);
  void Finish(const std::vector<QueuedRequest>& requests, const ::grpc::Status& status,
              inference::ModelInferResponse& response);
  void TimerLoop();

  const Upstream upstream_;
  const int max_in_flight_;
  middleman::Histogram& rows_;
  middleman::Histogram& requests_;
  middleman::Histogram& queue_delay_;
  std::atomic<uint64_t> next_id_{0};

  mutable std::mutex mu_;
  std::condition_variable wake_;
  Keys keys_;
  int64_t queued_ = 0;
  bool stopped_ = false;
  bool exiting_ = false;
  std::thread timer_;
};

}  // namespace inferd::batcher
