// preserve_ordering through the dynamic scheduler: gated instances finish in
// an order the test decides; responses still reach their sinks in arrival
// order, errors included.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "fake_clock.h"
#include "scheduler/dynamic_batch_scheduler.h"
#include "scheduler_test_util.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;
using testing::Request;
using testing::Results;

// Each request's execution blocks until the test opens its gate, so the
// test decides the order in which instances finish.
class Gates {
 public:
  void Open(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.insert(id);
    cv_.notify_all();
  }
  // Lets every execution through, now and later (so a failed test ends).
  void OpenAll() {
    std::lock_guard<std::mutex> lock(mu_);
    all_open_ = true;
    cv_.notify_all();
  }
  // Blocks until `id` has started executing.
  bool WaitStarted(const std::string& id) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return started_.count(id) > 0; });
  }
  void Pass(const std::string& id) {
    std::unique_lock<std::mutex> lock(mu_);
    started_.insert(id);
    cv_.notify_all();
    cv_.wait(lock, [&] { return all_open_ || open_.count(id) > 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> open_, started_;
  bool all_open_ = false;
};

class GatedInstance : public BackendInstance {
 public:
  explicit GatedInstance(Gates* gates) : gates_(gates) {}
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) {
      gates_->Pass(item.request->id);
      const InferInput& in = item.request->inputs[0];
      auto& o = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(o.buffer.data(), in.data.data, in.data.byte_size);
    }
  }

 private:
  Gates* gates_;
};

// Records the order in which sinks get their final signal.
struct Delivery {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> order;
  std::map<std::string, Status> status;

  std::unique_ptr<InferResponseSink> For(const std::string& id) {
    return MakeSingleResponseSink([this, id](Status s, std::unique_ptr<InferResponse>) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(id);
      status[id] = std::move(s);
      cv.notify_all();
    });
  }
  std::vector<std::string> Order() {
    std::lock_guard<std::mutex> lock(mu);
    return order;
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return order.size() >= n; });
  }
};

class PreserveOrderingTest : public ::testing::Test {
 protected:
  // Two instances, one request per execution, no queue delay.
  DynamicBatchScheduler* Make(SchedulerConfig c = SchedulerConfig()) {
    c.kind = SchedulerConfig::Kind::kDynamic;
    c.max_batch_size = 1;
    c.dynamic.preferred_batch_sizes = {1};
    c.dynamic.preserve_ordering = true;
    std::vector<std::unique_ptr<BackendInstance>> inst;
    for (int i = 0; i < 2; ++i) inst.push_back(std::make_unique<GatedInstance>(&gates_));
    sched_ = std::make_unique<DynamicBatchScheduler>(ModelIdentity{"m", 1}, c, std::move(inst),
                                                     &stats_, &clock_);
    return sched_.get();
  }
  void TearDown() override {
    gates_.OpenAll();
    sched_.reset();
  }
  std::unique_ptr<PendingRequest> Req(const std::string& id) {
    auto p = Request(id, 1, unused_);
    p->sink = delivery_.For(id);
    return p;
  }

  Gates gates_;
  testing::FakeClock clock_;
  ModelStats stats_;
  Results unused_;
  Delivery delivery_;
  std::unique_ptr<DynamicBatchScheduler> sched_;
};

TEST_F(PreserveOrderingTest, InstancesFinishingOutOfOrderStillDeliverInArrivalOrder) {
  auto s = Make();
  s->Enqueue(Req("a"));
  s->Enqueue(Req("b"));
  ASSERT_TRUE(gates_.WaitStarted("a"));
  ASSERT_TRUE(gates_.WaitStarted("b"));
  s->Enqueue(Req("c"));  // queued: both instances are busy
  gates_.Open("b");
  // The instance that ran b takes c next: b's response has been handed on
  // by then, and must be held for a.
  ASSERT_TRUE(gates_.WaitStarted("c"));
  gates_.Open("c");
  s->Enqueue(Req("d"));
  ASSERT_TRUE(gates_.WaitStarted("d"));  // c has left its instance too
  EXPECT_TRUE(delivery_.Order().empty());
  gates_.Open("a");
  ASSERT_TRUE(delivery_.WaitFor(3));
  gates_.Open("d");
  ASSERT_TRUE(delivery_.WaitFor(4));
  EXPECT_EQ(delivery_.Order(), (std::vector<std::string>{"a", "b", "c", "d"}));
  for (auto& [id, st] : delivery_.status) EXPECT_TRUE(st.ok()) << id;
}

TEST_F(PreserveOrderingTest, TimedOutAndCancelledRequestsKeepTheirPlace) {
  SchedulerConfig c;
  c.dynamic.default_policy.default_timeout_us = 1000;  // REJECT on timeout
  auto s = Make(c);
  s->Enqueue(Req("a"));
  s->Enqueue(Req("x"));
  ASSERT_TRUE(gates_.WaitStarted("a"));
  ASSERT_TRUE(gates_.WaitStarted("x"));
  s->Enqueue(Req("late"));  // times out in the queue
  auto gone = Req("gone");  // cancelled in the queue
  gone->request->cancel_flag = std::make_shared<std::atomic<bool>>(false);
  auto flag = gone->request->cancel_flag;
  s->Enqueue(std::move(gone));
  flag->store(true);
  clock_.Advance(2000us);
  s->Enqueue(Req("c"));  // enqueued after the clock moved: in time
  gates_.Open("x");
  // x's instance fails `late` and `gone` before it takes c.
  ASSERT_TRUE(gates_.WaitStarted("c"));
  EXPECT_TRUE(delivery_.Order().empty());  // all wait for a
  gates_.Open("a");
  ASSERT_TRUE(delivery_.WaitFor(4));
  gates_.Open("c");
  ASSERT_TRUE(delivery_.WaitFor(5));
  EXPECT_EQ(delivery_.Order(), (std::vector<std::string>{"a", "x", "late", "gone", "c"}));
  EXPECT_EQ(delivery_.status["late"].code(), StatusCode::kUnavailable);
  EXPECT_NE(delivery_.status["late"].message().find("timeout"), std::string::npos);
  EXPECT_EQ(delivery_.status["gone"].code(), StatusCode::kCancelled);
  EXPECT_TRUE(delivery_.status["c"].ok());
  EXPECT_EQ(stats_.Snapshot().fail_cancelled, 1u);
  EXPECT_EQ(stats_.Snapshot().fail_rejected, 1u);
}

TEST_F(PreserveOrderingTest, ARejectionKeepsItsPlace) {
  SchedulerConfig c;
  c.dynamic.default_policy.max_queue_size = 1;
  auto s = Make(c);
  s->Enqueue(Req("a"));
  ASSERT_TRUE(gates_.WaitStarted("a"));  // out of the queue: b fits
  s->Enqueue(Req("b"));
  ASSERT_TRUE(gates_.WaitStarted("b"));
  s->Enqueue(Req("queued"));
  s->Enqueue(Req("full"));  // rejected on this thread, at once
  EXPECT_TRUE(delivery_.Order().empty());
  gates_.Open("b");
  gates_.Open("queued");
  gates_.Open("a");
  ASSERT_TRUE(delivery_.WaitFor(4));
  EXPECT_EQ(delivery_.Order(), (std::vector<std::string>{"a", "b", "queued", "full"}));
  EXPECT_EQ(delivery_.status["full"].code(), StatusCode::kUnavailable);
  EXPECT_NE(delivery_.status["full"].message().find("maximum queue size"), std::string::npos);
}

}  // namespace
}  // namespace inferd
