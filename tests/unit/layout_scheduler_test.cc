// DynamicBatchScheduler under an automatic instance layout
// (scheduler/instance_layout.h): only active instances take work, each
// execution carries the layout's thread hint, layout switches lose no
// request, and Stop drains with every instance.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "fake_clock.h"
#include "scheduler/dynamic_batch_scheduler.h"
#include "scheduler_test_util.h"

namespace inferd {
namespace {

using testing::Request;
using testing::Results;

struct Seen {
  size_t instance;
  int threads;
};

// Records (instance, thread hint) and copies INPUT0 to OUTPUT0.
class HintInstance : public BackendInstance {
 public:
  HintInstance(size_t index, std::vector<Seen>* log, std::mutex* mu)
      : index_(index), log_(log), mu_(mu) {}
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) {
      const InferInput& in = item.request->inputs[0];
      auto& o = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(o.buffer.data(), in.data.data, in.data.byte_size);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(*mu_);
    log_->push_back(Seen{index_, batch.empty() ? -1 : batch[0].cpu_threads});
  }

 private:
  size_t index_;
  std::vector<Seen>* log_;
  std::mutex* mu_;
};

class LayoutSchedulerTest : public ::testing::Test {
 protected:
  std::unique_ptr<DynamicBatchScheduler> Make(int instances, LayoutTunerOptions options) {
    SchedulerConfig config;
    config.kind = SchedulerConfig::Kind::kNone;
    config.inline_max_exec_us = 0;  // every execution on an instance thread
    config.layout = std::make_shared<InstanceLayout>("m", 1, instances, options);
    layout_ = config.layout;
    std::vector<std::unique_ptr<BackendInstance>> inst;
    for (int i = 0; i < instances; ++i) {
      inst.push_back(std::make_unique<HintInstance>(i, &log_, &mu_));
    }
    return std::make_unique<DynamicBatchScheduler>(ModelIdentity{"m", 1}, config, std::move(inst),
                                                   &stats_, &clock_);
  }
  std::vector<Seen> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

  testing::FakeClock clock_;
  ModelStats stats_;
  std::mutex mu_;
  std::vector<Seen> log_;
  Results results_;
  std::shared_ptr<InstanceLayout> layout_;
};

TEST_F(LayoutSchedulerTest, OnlyTheFirstInstanceRunsWithEveryThreadBeforeAnySwitch) {
  LayoutTunerOptions never;
  never.min_executions = 1000000;  // the first trial never ends
  auto s = Make(4, never);
  for (int i = 0; i < 20; ++i) {
    s->Enqueue(Request("r" + std::to_string(i), i, results_));
  }
  ASSERT_TRUE(results_.WaitFor(20));
  s->Stop();
  for (const Seen& e : Log()) {
    EXPECT_EQ(e.instance, 0u);
    EXPECT_EQ(e.threads, 4);
  }
  EXPECT_EQ(Log().size(), 20u);
  EXPECT_EQ(results_.value["r7"], 7);
}

TEST_F(LayoutSchedulerTest, SwitchesLoseNoRequestAndHintsFollowTheLayout) {
  LayoutTunerOptions quick;
  quick.trial = std::chrono::nanoseconds(1);
  quick.min_executions = 2;
  quick.min_settled_samples = 2;
  quick.reevaluate = std::chrono::nanoseconds(1);  // search again and again
  auto s = Make(4, quick);
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 100; ++i) {
        s->Enqueue(Request("c" + std::to_string(c) + "_" + std::to_string(i), i, results_));
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_TRUE(results_.WaitFor(400)) << "requests were lost across layout switches";
  s->Stop();
  bool other_instance = false;
  for (const Seen& e : Log()) {
    // Instance i runs only in layouts of more than i instances: 4/threads > i.
    EXPECT_TRUE(e.threads == 1 || e.threads == 2 || e.threads == 4) << e.threads;
    EXPECT_LT(e.instance, static_cast<size_t>(4 / e.threads));
    other_instance = other_instance || e.instance > 0;
  }
  EXPECT_TRUE(other_instance) << "no layout with more than one instance was tried";
  for (const auto& [id, st] : results_.status) EXPECT_TRUE(st.ok()) << id;
}

}  // namespace
}  // namespace inferd
