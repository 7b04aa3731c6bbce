// Helpers shared by the scheduler unit tests: requests carrying one INT32
// value, and the results their sinks record.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/response_sink.h"
#include "scheduler/scheduler.h"

namespace inferd::testing {

using namespace std::chrono_literals;

struct Results {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Status> status;
  std::map<std::string, int32_t> value;

  std::unique_ptr<InferResponseSink> For(const std::string& id) {
    return MakeSingleResponseSink([this, id](Status s, std::unique_ptr<InferResponse> r) {
      std::lock_guard<std::mutex> lock(mu);
      if (r) {
        int32_t v;
        std::memcpy(&v, r->outputs[0].buffer.data(), 4);
        value[id] = v;
      }
      status[id] = s;
      cv.notify_all();
    });
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return status.size() >= n; });
  }
};

inline std::unique_ptr<PendingRequest> Request(const std::string& id, int32_t value,
                                               Results& results, int64_t batch = 1) {
  auto p = std::make_unique<PendingRequest>();
  p->request = std::make_unique<InferRequest>();
  p->request->id = id;
  p->request->batch_size = batch;
  InferInput in;
  in.name = "INPUT0";
  in.datatype = DataType::kInt32;
  in.shape = {batch, 1};
  char* buf = p->request->Allocate(4 * batch);
  for (int64_t i = 0; i < batch; ++i) std::memcpy(buf + 4 * i, &value, 4);
  in.data = BufferView{buf, static_cast<size_t>(4 * batch)};
  p->request->inputs.push_back(in);
  p->sink = results.For(id);
  return p;
}

}  // namespace inferd::testing
