// SerialWorker: one owned thread that runs slow control work (model load
// and unload, CUDA IPC registration) in the order it is posted, off the
// front ends' threads. Used by ControlPlane.
//
// Threading: Post and Stop may be called from any thread except the worker
// itself. Each Post calls its `done` exactly once: on the worker thread
// with what `work` returned; or, once Stop has begun, with UNAVAILABLE
// "server is shutting down" and without running `work` (on the worker
// thread for work queued but not started, on the calling thread for a Post
// after Stop). `done` must not block: it delays the work behind it.
//
// PostAsync is for work that answers later: `work` is handed `done` and
// must see it called exactly once, from any thread, now or later; the
// worker moves on when `work` returns. Refused work is answered as above.
//
// Stop lets the running work finish, answers the queued work, and joins
// the thread. Idempotent; the destructor calls it.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/status.h"
#include "core/thread_annotations.h"

namespace inferd {

class SerialWorker {
 public:
  using Work = std::function<Status()>;
  using Done = std::function<void(Status)>;
  using AsyncWork = std::function<void(Done)>;

  SerialWorker();  // starts the thread
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  void Post(Work work, Done done) INFERD_EXCLUDES(mu_);
  void PostAsync(AsyncWork work, Done done) INFERD_EXCLUDES(mu_);
  void Stop() INFERD_EXCLUDES(mu_);

  // The answer to work refused because the worker is stopping.
  static Status ShuttingDown();

 private:
  struct Task {
    Work work;        // or
    AsyncWork async;  // (PostAsync)
    Done done;
  };
  void Loop() INFERD_EXCLUDES(mu_);

  Mutex mu_;
  CondVar cv_;
  std::deque<Task> tasks_ INFERD_GUARDED_BY(mu_);
  bool stopping_ INFERD_GUARDED_BY(mu_) = false;
  std::mutex join_mu_;  // one Stop joins; a concurrent one waits for it
  std::thread thread_;
};

}  // namespace inferd
