#include "server/serial_worker.h"

namespace inferd {

SerialWorker::SerialWorker() : thread_([this] { Loop(); }) {}

SerialWorker::~SerialWorker() { Stop(); }

Status SerialWorker::ShuttingDown() { return Unavailable("server is shutting down"); }

void SerialWorker::Post(Work work, Done done) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      tasks_.push_back(Task{std::move(work), nullptr, std::move(done)});
      cv_.NotifyOne();
      return;
    }
  }
  done(ShuttingDown());
}

void SerialWorker::PostAsync(AsyncWork work, Done done) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      tasks_.push_back(Task{nullptr, std::move(work), std::move(done)});
      cv_.NotifyOne();
      return;
    }
  }
  done(ShuttingDown());
}

void SerialWorker::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.NotifyOne();
  }
  std::lock_guard<std::mutex> join(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void SerialWorker::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && tasks_.empty()) cv_.Wait(lock);
    if (tasks_.empty()) return;  // stopping, nothing left
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    const bool run = !stopping_;
    lock.Unlock();
    if (!run) {
      task.done(ShuttingDown());
    } else if (task.async) {
      task.async(std::move(task.done));
    } else {
      task.done(task.work());
    }
    task = Task{};  // whatever the task captured is released off the lock
    lock.Lock();
  }
}

}  // namespace inferd
