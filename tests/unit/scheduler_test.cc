// The threaded scheduler shells, driven by a fake clock: no sleeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include "backend/builtin/builtin_backends.h"
#include "fake_clock.h"
#include "scheduler/dynamic_batch_scheduler.h"
#include "scheduler/sequence_scheduler.h"
#include "scheduler_test_util.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;
using testing::Request;
using testing::Results;

// Records each execution's request ids and copies INPUT0 to OUTPUT0.
class RecordingInstance : public BackendInstance {
 public:
  explicit RecordingInstance(std::vector<std::vector<std::string>>* log, std::mutex* mu)
      : log_(log), mu_(mu) {}
  void Execute(std::span<ExecutionItem> batch) override {
    std::vector<std::string> ids;
    for (auto& item : batch) {
      ids.push_back(item.request->id);
      const InferInput& in = item.request->inputs[0];
      auto& o = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(o.buffer.data(), in.data.data, in.data.byte_size);
    }
    std::lock_guard<std::mutex> lock(*mu_);
    log_->push_back(std::move(ids));
  }

 private:
  std::vector<std::vector<std::string>>* log_;
  std::mutex* mu_;
};

class DynamicSchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<DynamicBatchScheduler> Make(SchedulerConfig config, int instances = 1) {
    config.kind = SchedulerConfig::Kind::kDynamic;
    if (config.max_batch_size == 0) config.max_batch_size = 8;
    std::vector<std::unique_ptr<BackendInstance>> inst;
    for (int i = 0; i < instances; ++i) {
      inst.push_back(std::make_unique<RecordingInstance>(&log_, &log_mu_));
    }
    return std::make_unique<DynamicBatchScheduler>(ModelIdentity{"m", 1}, config, std::move(inst),
                                                   &stats_, &clock_);
  }
  std::vector<std::vector<std::string>> Log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  testing::FakeClock clock_;
  ModelStats stats_;
  std::mutex log_mu_;
  std::vector<std::vector<std::string>> log_;
  Results results_;
};

TEST_F(DynamicSchedulerTest, WaitsForTheDelayThenFillsTheBatch) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000;
  auto s = Make(c);
  for (int i = 0; i < 3; ++i) s->Enqueue(Request("a" + std::to_string(i), i, results_));
  clock_.Advance(999us);
  for (int i = 3; i < 8; ++i) s->Enqueue(Request("a" + std::to_string(i), i, results_));
  ASSERT_TRUE(results_.WaitFor(8));
  ASSERT_EQ(Log().size(), 1u);  // one batch of 8: nothing ran before the delay ended
  EXPECT_EQ(Log()[0].size(), 8u);
  EXPECT_EQ(results_.value["a5"], 5);
  const auto snap = stats_.Snapshot();
  EXPECT_EQ(snap.inference_count, 8u);
  EXPECT_EQ(snap.execution_count, 1u);
  EXPECT_EQ(snap.success.count, 8u);
  EXPECT_EQ(snap.batch_stats.at(8).compute_infer.count, 1u);
}

TEST_F(DynamicSchedulerTest, DelayExpiryRunsAPartialBatch) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000;
  auto s = Make(c);
  s->Enqueue(Request("x", 1, results_));
  s->Enqueue(Request("y", 2, results_, 2));
  clock_.Advance(1000us);
  ASSERT_TRUE(results_.WaitFor(2));
  ASSERT_EQ(Log().size(), 1u);
  EXPECT_EQ(stats_.Snapshot().inference_count, 3u);  // rows, not requests
}

TEST_F(DynamicSchedulerTest, FullQueueRejectsAtOnce) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000000;
  c.dynamic.default_policy.max_queue_size = 2;
  auto s = Make(c);
  s->Enqueue(Request("q1", 1, results_));
  s->Enqueue(Request("q2", 2, results_));
  s->Enqueue(Request("q3", 3, results_));
  ASSERT_TRUE(results_.WaitFor(1));
  EXPECT_EQ(results_.status["q3"].code(), StatusCode::kUnavailable);
  EXPECT_NE(results_.status["q3"].message().find("maximum queue size"), std::string::npos);
  clock_.Advance(1000000us);
  ASSERT_TRUE(results_.WaitFor(3));
  EXPECT_TRUE(results_.status["q1"].ok());
  EXPECT_EQ(stats_.Snapshot().fail_rejected, 1u);
}

TEST_F(DynamicSchedulerTest, TimeoutRejectsAndOverrideLowersIt) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 10000;
  c.dynamic.default_policy.default_timeout_us = 5000;
  c.dynamic.default_policy.allow_timeout_override = true;
  auto s = Make(c);
  auto early = Request("early", 1, results_);
  early->request->timeout_us = 1000;  // overrides 5000 downwards
  s->Enqueue(std::move(early));
  clock_.Advance(1500us);
  ASSERT_TRUE(results_.WaitFor(1));
  EXPECT_EQ(results_.status["early"].code(), StatusCode::kUnavailable);
  EXPECT_NE(results_.status["early"].message().find("timeout"), std::string::npos);
  s->Enqueue(Request("late", 2, results_));
  clock_.Advance(5000us);
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_EQ(results_.status["late"].code(), StatusCode::kUnavailable);
}

TEST_F(DynamicSchedulerTest, DelayPolicyServesTimedOutRequestsLast) {
  SchedulerConfig c;
  c.max_batch_size = 1;
  c.dynamic.preferred_batch_sizes = {1};
  c.dynamic.max_queue_delay_us = 0;
  c.dynamic.default_policy.default_timeout_us = 100;
  c.dynamic.default_policy.delay_on_timeout = true;
  auto s = Make(c);
  // Nothing runs until the batch can form: hold the only instance busy by
  // enqueueing while stopped is not possible, so check the outcome: a
  // DELAY timeout never fails a request.
  s->Enqueue(Request("d1", 1, results_));
  clock_.Advance(200us);
  s->Enqueue(Request("d2", 2, results_));
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_TRUE(results_.status["d1"].ok());
  EXPECT_TRUE(results_.status["d2"].ok());
}

TEST_F(DynamicSchedulerTest, HigherPriorityIsServedFirst) {
  SchedulerConfig c;
  c.max_batch_size = 2;
  c.dynamic.preferred_batch_sizes = {2};
  c.dynamic.max_queue_delay_us = 1000000;
  c.dynamic.priority_levels = 2;
  c.dynamic.default_priority_level = 2;
  auto s = Make(c);
  s->Enqueue(Request("low1", 1, results_));  // priority 0 = default level 2
  auto high = Request("high", 3, results_);
  high->request->priority = 1;
  s->Enqueue(std::move(high));  // batch of 2 forms now: high first
  s->Enqueue(Request("low2", 2, results_));
  clock_.Advance(1000000us);
  ASSERT_TRUE(results_.WaitFor(3));
  auto log = Log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0], (std::vector<std::string>{"high", "low1"}));
  EXPECT_EQ(log[1], (std::vector<std::string>{"low2"}));
}

TEST_F(DynamicSchedulerTest, CancelledRequestIsDroppedFromTheQueue) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000;
  auto s = Make(c);
  auto p = Request("gone", 1, results_);
  p->request->cancel_flag = std::make_shared<std::atomic<bool>>(false);
  auto flag = p->request->cancel_flag;
  s->Enqueue(std::move(p));
  s->Enqueue(Request("stays", 2, results_));
  flag->store(true);
  clock_.Advance(1000us);
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_EQ(results_.status["gone"].code(), StatusCode::kCancelled);
  EXPECT_TRUE(results_.status["stays"].ok());
  EXPECT_EQ(stats_.Snapshot().fail_cancelled, 1u);
  ASSERT_EQ(Log().size(), 1u);
  EXPECT_EQ(Log()[0], (std::vector<std::string>{"stays"}));
}

TEST_F(DynamicSchedulerTest, DifferentShapesNeverShareABatch) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000;
  auto s = Make(c);
  s->Enqueue(Request("one", 1, results_));
  auto wide = Request("wide", 1, results_);
  wide->request->inputs[0].shape = {1, 2};
  s->Enqueue(std::move(wide));
  clock_.Advance(1000us);
  ASSERT_TRUE(results_.WaitFor(2));
  auto log = Log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].size(), 1u);
}

TEST_F(DynamicSchedulerTest, StopDrainsQueuedRequests) {
  SchedulerConfig c;
  c.dynamic.preferred_batch_sizes = {8};
  c.dynamic.max_queue_delay_us = 1000000;
  auto s = Make(c, 2);
  for (int i = 0; i < 5; ++i) s->Enqueue(Request("s" + std::to_string(i), i, results_));
  s->Stop();
  ASSERT_TRUE(results_.WaitFor(5));
  for (auto& [id, st] : results_.status) EXPECT_TRUE(st.ok()) << id;
  s->Enqueue(Request("after", 1, results_));
  ASSERT_TRUE(results_.WaitFor(6));
  EXPECT_EQ(results_.status["after"].code(), StatusCode::kUnavailable);
}

// ---- sequences ----------------------------------------------------------------

// Records the thread each execution ran on; optionally takes a while.
class ThreadRecordingInstance : public BackendInstance {
 public:
  ThreadRecordingInstance(std::vector<std::thread::id>* threads, std::mutex* mu,
                          std::chrono::microseconds work)
      : threads_(threads), mu_(mu), work_(work) {}
  void Execute(std::span<ExecutionItem> batch) override {
    if (work_.count() > 0) std::this_thread::sleep_for(work_);
    for (auto& item : batch) {
      const InferInput& in = item.request->inputs[0];
      auto& o = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(o.buffer.data(), in.data.data, in.data.byte_size);
    }
    std::lock_guard<std::mutex> lock(*mu_);
    threads_->push_back(std::this_thread::get_id());
  }

 private:
  std::vector<std::thread::id>* threads_;
  std::mutex* mu_;
  std::chrono::microseconds work_;
};

// Runs `n` requests one after another on a scheduler without dynamic
// batching; returns how many executed on the calling (test) thread.
size_t RunSequentially(uint64_t inline_max_exec_us, std::chrono::microseconds work, int n) {
  std::vector<std::thread::id> threads;
  std::mutex mu;
  SchedulerConfig c;
  c.kind = SchedulerConfig::Kind::kNone;
  c.inline_max_exec_us = inline_max_exec_us;
  std::vector<std::unique_ptr<BackendInstance>> inst;
  inst.push_back(std::make_unique<ThreadRecordingInstance>(&threads, &mu, work));
  testing::FakeClock clock;
  ModelStats stats;
  Results results;
  {
    DynamicBatchScheduler s(ModelIdentity{"m", 1}, c, std::move(inst), &stats, &clock);
    for (int i = 0; i < n; ++i) {
      s.Enqueue(Request("r" + std::to_string(i), i, results));
      EXPECT_TRUE(results.WaitFor(static_cast<size_t>(i) + 1));
      // Give the instance thread time to go back to waiting for work.
      std::this_thread::sleep_for(200us);
    }
  }
  EXPECT_EQ(results.value["r" + std::to_string(n - 1)], n - 1);
  EXPECT_EQ(stats.Snapshot().success.count, static_cast<uint64_t>(n));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(threads.size(), static_cast<size_t>(n));
  return static_cast<size_t>(
      std::count(threads.begin(), threads.end(), std::this_thread::get_id()));
}

TEST(InlineExecutionTest, FastModelRunsOnTheCallersThreadOnceMeasured) {
  // A bound far above a no-op execution, so that sanitizer builds on loaded
  // cores (where one run took over 100 us) still measure it as fast.
  const size_t inline_runs = RunSequentially(5000, 0us, 20);
  EXPECT_GE(inline_runs, 1u);
  EXPECT_LE(inline_runs, 19u);  // the first execution is measured on the instance thread
}

TEST(InlineExecutionTest, OffWhenDisabledOrTheModelIsSlow) {
  EXPECT_EQ(RunSequentially(0, 0us, 10), 0u);
  EXPECT_EQ(RunSequentially(100, 2000us, 10), 0u);
}

TEST(InlineExecutionTest, StopWaitsForInlineRunsAndQueuedRequestsStillRun) {
  // Several callers at once on two instances: some run inline, the rest
  // queue; every request completes, and destroying the scheduler is safe.
  std::vector<std::thread::id> threads;
  std::mutex mu;
  SchedulerConfig c;
  c.kind = SchedulerConfig::Kind::kNone;
  std::vector<std::unique_ptr<BackendInstance>> inst;
  for (int i = 0; i < 2; ++i) {
    inst.push_back(std::make_unique<ThreadRecordingInstance>(&threads, &mu, 20us));
  }
  testing::FakeClock clock;
  ModelStats stats;
  Results results;
  {
    DynamicBatchScheduler s(ModelIdentity{"m", 1}, c, std::move(inst), &stats, &clock);
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          s.Enqueue(Request("c" + std::to_string(t) + "_" + std::to_string(i), i, results));
        }
      });
    }
    for (auto& t : callers) t.join();
    ASSERT_TRUE(results.WaitFor(200));
  }
  EXPECT_EQ(stats.Snapshot().success.count, 200u);
}

class SequenceSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.name = "acc";
    spec_.max_batch_size = 4;
    TensorSpec in, out;
    in.name = "INPUT0";
    in.datatype = DataType::kInt32;
    in.dims = {1};
    out = in;
    out.name = "OUTPUT0";
    spec_.inputs = {in};
    spec_.outputs = {out};
    config_.kind = SchedulerConfig::Kind::kSequence;
    config_.max_batch_size = 4;
    config_.sequence.max_sequence_idle_us = 5000;
    config_.sequence.controls = {
        {"START", ControlKind::kStart, DataType::kInt32, 0, 1},
        {"END", ControlKind::kEnd, DataType::kInt32, 0, 1},
        {"READY", ControlKind::kReady, DataType::kInt32, 0, 1},
        {"CORRID", ControlKind::kCorrelationId, DataType::kUint64, 0, 1},
    };
    for (const auto& c : config_.sequence.controls) {
      spec_.sequence_controls.push_back({c.input_name, c.kind, c.datatype});
    }
    backend_ = MakeAccumulatorBackend();
    ModelLoadContext ctx;
    ctx.spec = &spec_;
    model_ = std::move(*backend_->LoadModel(ctx));
    std::vector<std::unique_ptr<BackendInstance>> inst;
    for (int i = 0; i < 2; ++i) inst.push_back(std::move(*model_->CreateInstance({})));
    sched_ = std::make_unique<SequenceScheduler>(ModelIdentity{"acc", 1}, config_, std::move(inst),
                                                 &stats_, &clock_);
  }
  void TearDown() override { sched_->Stop(); }

  void Send(const std::string& id, CorrelationId corr, int32_t v, bool start, bool end) {
    auto p = Request(id, v, results_);
    p->request->correlation_id = std::move(corr);
    p->request->sequence_start = start;
    p->request->sequence_end = end;
    sched_->Enqueue(std::move(p));
  }

  ModelSpec spec_;
  SchedulerConfig config_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<BackendModel> model_;
  testing::FakeClock clock_;
  ModelStats stats_;
  Results results_;
  std::unique_ptr<SequenceScheduler> sched_;
};

TEST_F(SequenceSchedulerTest, InterleavedSequencesKeepTheirOwnState) {
  Send("a1", uint64_t{11}, 1, true, false);
  Send("b1", uint64_t{22}, 100, true, false);
  Send("a2", uint64_t{11}, 2, false, false);
  Send("b2", uint64_t{22}, 200, false, false);
  Send("a3", uint64_t{11}, 3, false, true);
  Send("b3", uint64_t{22}, 300, false, true);
  ASSERT_TRUE(results_.WaitFor(6));
  for (auto& [id, st] : results_.status) ASSERT_TRUE(st.ok()) << id << ": " << st.message();
  EXPECT_EQ(results_.value["a3"], 6);
  EXPECT_EQ(results_.value["b3"], 600);
  // Ended: the next request without START is refused.
  Send("a4", uint64_t{11}, 4, false, false);
  ASSERT_TRUE(results_.WaitFor(7));
  EXPECT_EQ(results_.status["a4"].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(results_.status["a4"].message().find("START"), std::string::npos);
}

TEST_F(SequenceSchedulerTest, MissingOrWrongCorrelationIdIsRefused) {
  Send("none", std::monostate{}, 1, true, false);
  Send("str", std::string("abc"), 1, true, false);
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_NE(results_.status["none"].message().find("correlation ID"), std::string::npos);
  EXPECT_NE(results_.status["str"].message().find("unsigned integer"), std::string::npos);
}

TEST_F(SequenceSchedulerTest, IdleSequenceIsReleased) {
  Send("i1", uint64_t{5}, 1, true, false);
  ASSERT_TRUE(results_.WaitFor(1));
  clock_.Advance(6000us);
  Send("i2", uint64_t{5}, 1, false, false);
  ASSERT_TRUE(results_.WaitFor(2));
  EXPECT_EQ(results_.status["i2"].code(), StatusCode::kInvalidArgument);
  // A new START works again.
  Send("i3", uint64_t{5}, 7, true, true);
  ASSERT_TRUE(results_.WaitFor(3));
  EXPECT_EQ(results_.value["i3"], 7);
}

}  // namespace
}  // namespace inferd
