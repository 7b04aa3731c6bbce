// Implicit sequence state through the sequence scheduler
// (scheduler/sequence_state.h): a fake backend that adds its state input to
// INPUT0 and hands the sum back as its state output.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "fake_clock.h"
#include "scheduler/sequence_scheduler.h"
#include "scheduler_test_util.h"

namespace inferd {
namespace {

using testing::Request;

int32_t Int(const InferInput& in) {
  int32_t v = 0;
  std::memcpy(&v, in.data.data, 4);
  return v;
}

// OUTPUT0 = INPUT0 + IS; OS = OUTPUT0 (the next request's IS). Produces OS
// only when `state_out` says so.
class StatefulInstance : public BackendInstance {
 public:
  explicit StatefulInstance(bool* state_out) : state_out_(state_out) {}
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) {
      const InferInput* in = item.request->FindInput("INPUT0");
      const InferInput* st = item.request->FindInput("IS");
      if (in == nullptr || st == nullptr) {
        item.status = Internal("missing INPUT0 or IS");
        continue;
      }
      const int32_t sum = Int(*in) + Int(*st);
      for (const char* name : {"OUTPUT0", "OS"}) {
        if (std::string(name) == "OS" && !*state_out_) continue;
        auto& o = item.response->AddOutput(name, DataType::kInt32, st->shape, 4);
        std::memcpy(o.buffer.data(), &sum, 4);
      }
    }
  }

 private:
  bool* state_out_;
};

struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::map<std::string, int32_t>> outputs;  // id -> name -> value
  std::map<std::string, Status> status;

  std::unique_ptr<InferResponseSink> For(const std::string& id) {
    return MakeSingleResponseSink([this, id](Status s, std::unique_ptr<InferResponse> r) {
      std::lock_guard<std::mutex> lock(mu);
      if (r) {
        for (const auto& o : r->outputs) {
          int32_t v;
          std::memcpy(&v, o.buffer.data(), 4);
          outputs[id][o.name] = v;
        }
      }
      status[id] = s;
      cv.notify_all();
    });
  }
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return status.size() >= n; });
  }
};

class SequenceStateTest : public ::testing::Test {
 protected:
  void Start(bool output_is_model_output, int32_t initial = 0, int instances = 2) {
    config_.kind = SchedulerConfig::Kind::kSequence;
    config_.max_batch_size = 4;
    config_.sequence.max_sequence_idle_us = 5000;
    SequenceStateConfig st;
    st.input_name = "IS";
    st.output_name = "OS";
    st.datatype = DataType::kInt32;
    st.initial_shape = {1};
    st.initial_data.assign(reinterpret_cast<const char*>(&initial), 4);
    st.output_is_model_output = output_is_model_output;
    config_.sequence.states = {st};
    std::vector<std::unique_ptr<BackendInstance>> inst;
    for (int i = 0; i < instances; ++i) {
      inst.push_back(std::make_unique<StatefulInstance>(&state_out_));
    }
    sched_ = std::make_unique<SequenceScheduler>(ModelIdentity{"st", 1}, config_, std::move(inst),
                                                 &stats_, &clock_);
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
  }
  void Send(const std::string& id, uint64_t corr, int32_t v, bool start, bool end,
            std::vector<std::string> outputs = {}) {
    testing::Results unused;
    auto p = Request(id, v, unused);
    p->sink = seen_.For(id);
    p->request->correlation_id = corr;
    p->request->sequence_start = start;
    p->request->sequence_end = end;
    for (auto& o : outputs) p->request->outputs.push_back(RequestedOutput{o, 0});
    sched_->Enqueue(std::move(p));
  }

  bool state_out_ = true;
  SchedulerConfig config_;
  testing::FakeClock clock_;
  ModelStats stats_;
  Seen seen_;
  std::unique_ptr<SequenceScheduler> sched_;
};

TEST_F(SequenceStateTest, EachSequenceAccumulatesInItsOwnState) {
  Start(/*output_is_model_output=*/false);
  Send("a1", 1, 1, true, false);
  Send("b1", 2, 100, true, false);
  Send("a2", 1, 2, false, false);
  Send("b2", 2, 200, false, false);
  Send("a3", 1, 3, false, true);
  Send("b3", 2, 300, false, true);
  ASSERT_TRUE(seen_.WaitFor(6));
  for (auto& [id, st] : seen_.status) ASSERT_TRUE(st.ok()) << id << ": " << st.message();
  EXPECT_EQ(seen_.outputs["a1"]["OUTPUT0"], 1);
  EXPECT_EQ(seen_.outputs["a3"]["OUTPUT0"], 6);
  EXPECT_EQ(seen_.outputs["b3"]["OUTPUT0"], 600);
  // The state output is not a configured output: never sent.
  for (auto& [id, outs] : seen_.outputs) EXPECT_EQ(outs.count("OS"), 0u) << id;
  // A new START begins from the initial state again.
  Send("a4", 1, 5, true, true);
  ASSERT_TRUE(seen_.WaitFor(7));
  EXPECT_EQ(seen_.outputs["a4"]["OUTPUT0"], 5);
}

TEST_F(SequenceStateTest, InitialStateAndRequestedOutputs) {
  Start(/*output_is_model_output=*/true, /*initial=*/1000);
  // No outputs named: every configured output, the state one included.
  Send("x1", 7, 1, true, false);
  // Named outputs: the state output survives selection for the next
  // request but is not sent.
  Send("x2", 7, 2, false, false, {"OUTPUT0"});
  Send("x3", 7, 3, false, true, {"OS"});
  ASSERT_TRUE(seen_.WaitFor(3));
  for (auto& [id, st] : seen_.status) ASSERT_TRUE(st.ok()) << id << ": " << st.message();
  EXPECT_EQ(seen_.outputs["x1"]["OUTPUT0"], 1001);
  EXPECT_EQ(seen_.outputs["x1"]["OS"], 1001);
  EXPECT_EQ(seen_.outputs["x2"]["OUTPUT0"], 1003);
  EXPECT_EQ(seen_.outputs["x2"].count("OS"), 0u);
  EXPECT_EQ(seen_.outputs["x3"].count("OUTPUT0"), 0u);
  EXPECT_EQ(seen_.outputs["x3"]["OS"], 1006);
}

TEST_F(SequenceStateTest, AStateNotProducedStaysAsItWas) {
  Start(/*output_is_model_output=*/false, /*initial=*/10, /*instances=*/1);
  Send("s1", 3, 1, true, false);
  ASSERT_TRUE(seen_.WaitFor(1));
  state_out_ = false;  // the instance thread reads it only while s2 runs
  Send("s2", 3, 1, false, false);
  ASSERT_TRUE(seen_.WaitFor(2));
  state_out_ = true;
  Send("s3", 3, 1, false, true);
  ASSERT_TRUE(seen_.WaitFor(3));
  EXPECT_EQ(seen_.outputs["s1"]["OUTPUT0"], 11);
  EXPECT_EQ(seen_.outputs["s2"]["OUTPUT0"], 12);
  EXPECT_EQ(seen_.outputs["s3"]["OUTPUT0"], 12);  // s2 left the state at 11
}

}  // namespace
}  // namespace inferd
