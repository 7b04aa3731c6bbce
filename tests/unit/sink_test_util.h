// Test sinks: a RecordingSink that logs every call it gets (so tests can
// check exactly what a producer or decorator sent), and helpers to make
// responses.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/response_sink.h"

namespace inferd::testing {

// One call a sink received.
struct SinkEvent {
  enum Kind { kSend, kFinish } kind;
  bool final = false;
  std::string response_id;  // kSend
  Status status;            // kFinish
};

// Everything a RecordingSink (or several) received, in order. Thread-safe.
class SinkLog {
 public:
  void Add(std::string who, SinkEvent e) {
    std::lock_guard<std::mutex> lock(mu_);
    who_.push_back(std::move(who));
    events_.push_back(std::move(e));
  }
  std::vector<SinkEvent> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Which sink got each call, in order.
  std::vector<std::string> who() const {
    std::lock_guard<std::mutex> lock(mu_);
    return who_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> who_;
  std::vector<SinkEvent> events_;
};

// Records every call into `log` under `name`, including calls after the
// final signal (which a producer must never make), and notes destruction.
class RecordingSink : public InferResponseSink {
 public:
  RecordingSink(std::string name, SinkLog* log, bool* destroyed = nullptr)
      : name_(std::move(name)), log_(log), destroyed_(destroyed) {}
  ~RecordingSink() override {
    if (destroyed_) *destroyed_ = true;
  }
  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    log_->Add(name_, SinkEvent{SinkEvent::kSend, final, response ? response->id : "<null>", {}});
  }
  void Finish(Status status) override {
    log_->Add(name_, SinkEvent{SinkEvent::kFinish, true, "", std::move(status)});
  }

 private:
  std::string name_;
  SinkLog* log_;
  bool* destroyed_;
};

inline std::unique_ptr<InferResponse> MakeResponse(const std::string& id,
                                                   const std::string& model = "m") {
  auto r = std::make_unique<InferResponse>();
  r->id = id;
  r->model_name = model;
  return r;
}

}  // namespace inferd::testing
