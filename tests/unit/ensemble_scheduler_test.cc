// EnsembleScheduler against fake composing models (an InferFunction that
// answers by model name): tensors flow between steps, the first error
// finishes the ensemble exactly once, Stop waits for steps in flight, and
// Validate names the tensor at fault.
#include "scheduler/ensemble_scheduler.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <thread>

#include "fake_clock.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;

TensorSpec Int32(const std::string& name) {
  TensorSpec t;
  t.name = name;
  t.datatype = DataType::kInt32;
  t.dims = {1};
  return t;
}

int32_t ValueOf(const InferOutput& o) {
  int32_t v;
  std::memcpy(&v, o.buffer.data(), 4);
  return v;
}

// Composing models, by name. Each reads input IN and writes output OUT
// (INT32 [1]):
//   double, inc    OUT = IN * 2, OUT = IN + 1
//   fail           finishes with INVALID_ARGUMENT
//   nonfinal       sends its response as non-final (a decoupled model)
//   noout          answers without OUT
//   async          held until the test calls CompleteAsync (then OUT = IN)
class FakeModels {
 public:
  InferFunction Function() {
    return [this](std::unique_ptr<InferRequest> req, std::unique_ptr<InferResponseSink> sink) {
      Infer(std::move(req), std::move(sink));
    };
  }

  // Completes the oldest held `async` request (OUT = IN, or `error`);
  // false if none is held.
  bool CompleteAsync(Status error = Status::Ok()) {
    std::unique_ptr<InferRequest> req;
    std::unique_ptr<InferResponseSink> sink;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (held_.empty()) return false;
      req = std::move(held_.front().first);
      sink = std::move(held_.front().second);
      held_.pop_front();
    }
    if (!error.ok()) {
      sink->Finish(std::move(error));
    } else {
      sink->Send(Answer(*req, ValueOf(*req)), /*final=*/true);
    }
    return true;
  }

  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::vector<std::string> ids() {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }

 private:
  static int32_t ValueOf(const InferRequest& req) {
    int32_t v;
    std::memcpy(&v, req.FindInput("IN")->data.data, 4);
    return v;
  }
  static std::unique_ptr<InferResponse> Answer(const InferRequest& req, int32_t v) {
    auto r = std::make_unique<InferResponse>();
    r->model_name = req.model_name;
    r->id = req.id;
    auto& o = r->AddOutput("OUT", DataType::kInt32, {1}, 4);
    std::memcpy(o.buffer.data(), &v, 4);
    return r;
  }

  void Infer(std::unique_ptr<InferRequest> req, std::unique_ptr<InferResponseSink> sink) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(req->model_name);
      ids_.push_back(req->id);
    }
    const std::string& m = req->model_name;
    if (m == "double") return sink->Send(Answer(*req, ValueOf(*req) * 2), true);
    if (m == "inc") return sink->Send(Answer(*req, ValueOf(*req) + 1), true);
    if (m == "fail") return sink->Finish(InvalidArgument("IN must be positive"));
    if (m == "nonfinal") return sink->Send(Answer(*req, 0), /*final=*/false);
    if (m == "noout") {
      auto r = std::make_unique<InferResponse>();
      r->model_name = m;
      return sink->Send(std::move(r), true);
    }
    if (m == "async") {
      std::lock_guard<std::mutex> lock(mu_);
      held_.emplace_back(std::move(req), std::move(sink));
      return;
    }
    sink->Finish(NotFound("unknown model '" + m + "'"));
  }

  std::mutex mu_;
  std::vector<std::string> calls_, ids_;
  std::deque<std::pair<std::unique_ptr<InferRequest>, std::unique_ptr<InferResponseSink>>> held_;
};

EnsembleStep Step(const std::string& model, const std::string& in, const std::string& out) {
  EnsembleStep s;
  s.model_name = model;
  s.input_map = {{"IN", in}};
  s.output_map = {{"OUT", out}};
  return s;
}

// The ensemble's final signal as a test sees it: every call counted.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  bool final = false;
  Status status;
  std::unique_ptr<InferResponse> response;

  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return calls > 0; });
  }
};

// Records into an Outcome the test keeps (the scheduler owns the sink).
class OutcomeSink : public InferResponseSink {
 public:
  explicit OutcomeSink(Outcome* out) : out_(out) {}
  void Send(std::unique_ptr<InferResponse> r, bool final) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    out_->calls++;
    out_->final = final;
    out_->response = std::move(r);
    out_->cv.notify_all();
  }
  void Finish(Status s) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    out_->calls++;
    out_->status = std::move(s);
    out_->cv.notify_all();
  }

 private:
  Outcome* out_;
};

class EnsembleSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.name = "ens";
    spec_.inputs = {Int32("INPUT")};
    spec_.outputs = {Int32("OUTPUT")};
    config_.kind = SchedulerConfig::Kind::kEnsemble;
  }

  EnsembleScheduler* Make() {
    EXPECT_TRUE(EnsembleScheduler::Validate(spec_, config_).ok());
    sched_ = std::make_unique<EnsembleScheduler>(ModelIdentity{"ens", 1}, spec_, config_,
                                                 models_.Function(), &stats_, &clock_);
    return sched_.get();
  }
  void TearDown() override {
    while (models_.CompleteAsync()) {
    }
    sched_.reset();
  }

  void Enqueue(EnsembleScheduler& s, int32_t value, Outcome* out,
               std::vector<std::string> outputs = {}) {
    auto p = std::make_unique<PendingRequest>();
    p->request = std::make_unique<InferRequest>();
    p->request->model_name = "ens";
    p->request->id = "req-7";
    char* buf = p->request->Allocate(4);
    std::memcpy(buf, &value, 4);
    p->request->inputs.push_back(InferInput{"INPUT", DataType::kInt32, {1}, BufferView{buf, 4}});
    for (auto& o : outputs) p->request->outputs.push_back({o, 0});
    p->sink = std::make_unique<OutcomeSink>(out);
    s.Enqueue(std::move(p));
  }

  ModelSpec spec_;
  SchedulerConfig config_;
  FakeModels models_;
  ModelStats stats_;
  testing::FakeClock clock_;
  std::unique_ptr<EnsembleScheduler> sched_;
};

TEST_F(EnsembleSchedulerTest, TensorsFlowThroughAPipeline) {
  // Listed out of order: the data flow decides what runs when.
  config_.ensemble_steps = {Step("inc", "t1", "OUTPUT"), Step("double", "INPUT", "t1")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 3, &out);
  ASSERT_TRUE(out.Wait());
  ASSERT_TRUE(out.status.ok()) << out.status.message();
  EXPECT_EQ(out.calls, 1);
  EXPECT_TRUE(out.final);
  ASSERT_NE(out.response, nullptr);
  EXPECT_EQ(out.response->model_name, "ens");
  EXPECT_EQ(out.response->id, "req-7");
  ASSERT_EQ(out.response->outputs.size(), 1u);
  EXPECT_EQ(out.response->outputs[0].name, "OUTPUT");
  EXPECT_EQ(ValueOf(out.response->outputs[0]), 7);  // 3 * 2 + 1
  EXPECT_EQ(models_.calls(), (std::vector<std::string>{"double", "inc"}));
  EXPECT_EQ(models_.ids(), (std::vector<std::string>{"req-7", "req-7"}));
  EXPECT_EQ(stats_.Snapshot().success.count, 1u);
}

TEST_F(EnsembleSchedulerTest, AFanOutFeedsTwoStepsAndRequestedOutputsAreKept) {
  spec_.outputs = {Int32("PLUS"), Int32("TIMES")};
  config_.ensemble_steps = {Step("double", "INPUT", "t1"), Step("inc", "t1", "PLUS"),
                            Step("double", "t1", "TIMES")};
  auto s = Make();
  Outcome all, one;
  Enqueue(*s, 5, &all);
  Enqueue(*s, 5, &one, {"TIMES"});
  ASSERT_TRUE(all.Wait());
  ASSERT_TRUE(one.Wait());
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  ASSERT_EQ(all.response->outputs.size(), 2u);
  EXPECT_EQ(ValueOf(*all.response->FindOutput("PLUS")), 11);
  EXPECT_EQ(ValueOf(*all.response->FindOutput("TIMES")), 20);
  ASSERT_EQ(one.response->outputs.size(), 1u);
  EXPECT_EQ(ValueOf(*one.response->FindOutput("TIMES")), 20);
}

TEST_F(EnsembleSchedulerTest, AFailingStepFinishesTheEnsembleOnceWithItsError) {
  config_.ensemble_steps = {Step("double", "INPUT", "t1"), Step("fail", "t1", "t2"),
                            Step("inc", "t2", "OUTPUT")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 3, &out);
  ASSERT_TRUE(out.Wait());
  s->Stop();  // returns: nothing is left in flight
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(out.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status.message(), "in ensemble 'ens', step 'fail': IN must be positive");
  EXPECT_EQ(models_.calls(), (std::vector<std::string>{"double", "fail"}));  // inc never ran
  EXPECT_EQ(stats_.Snapshot().fail.count, 1u);
}

TEST_F(EnsembleSchedulerTest, TwoFailingStepsFinishTheEnsembleOnceWithTheFirstError) {
  spec_.outputs = {Int32("A"), Int32("B")};
  config_.ensemble_steps = {Step("async", "INPUT", "A"), Step("async", "INPUT", "B")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 3, &out);
  ASSERT_TRUE(models_.CompleteAsync(Unavailable("first")));
  ASSERT_TRUE(models_.CompleteAsync(Internal("second")));
  s->Stop();
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(out.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(out.status.message(), "in ensemble 'ens', step 'async': first");
  EXPECT_EQ(stats_.Snapshot().fail.count, 1u);
}

TEST_F(EnsembleSchedulerTest, AnErrorWhileAStepRunsIsFinalAndStopWaitsForTheStep) {
  spec_.outputs = {Int32("A"), Int32("B")};
  config_.ensemble_steps = {Step("async", "INPUT", "A"), Step("fail", "INPUT", "B")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 3, &out);
  ASSERT_TRUE(out.Wait());  // the failure answers at once, async still runs
  EXPECT_EQ(out.status.code(), StatusCode::kInvalidArgument);
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    s->Stop();
    stopped = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(stopped.load());  // the async step still holds the run
  ASSERT_TRUE(models_.CompleteAsync());
  stopper.join();
  EXPECT_TRUE(stopped.load());
  std::lock_guard<std::mutex> lock(out.mu);
  EXPECT_EQ(out.calls, 1);  // the late success is dropped
  EXPECT_EQ(out.response, nullptr);
}

TEST_F(EnsembleSchedulerTest, StopWaitsForAPipelineInFlightThenRefusesNewRequests) {
  config_.ensemble_steps = {Step("async", "INPUT", "t1"), Step("inc", "t1", "OUTPUT")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 41, &out);
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    s->Stop();
    stopped = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(stopped.load());
  ASSERT_TRUE(models_.CompleteAsync());  // the next step runs, the run ends
  stopper.join();
  ASSERT_TRUE(out.status.ok()) << out.status.message();
  EXPECT_EQ(ValueOf(out.response->outputs[0]), 42);

  Outcome after;
  Enqueue(*s, 1, &after);
  ASSERT_TRUE(after.Wait());
  EXPECT_EQ(after.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(after.status.message().find("unloading"), std::string::npos);
}

TEST_F(EnsembleSchedulerTest, ANonFinalStepResponseFailsTheEnsemble) {
  config_.ensemble_steps = {Step("nonfinal", "INPUT", "OUTPUT")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 1, &out);
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.calls, 1);
  EXPECT_EQ(out.status.code(), StatusCode::kInternal);
  EXPECT_NE(out.status.message().find("in ensemble 'ens', step 'nonfinal'"), std::string::npos);
  EXPECT_NE(out.status.message().find("non-final"), std::string::npos);
}

TEST_F(EnsembleSchedulerTest, AStepWithoutItsMappedOutputFailsNamingIt) {
  config_.ensemble_steps = {Step("noout", "INPUT", "OUTPUT")};
  auto s = Make();
  Outcome out;
  Enqueue(*s, 1, &out);
  ASSERT_TRUE(out.Wait());
  EXPECT_EQ(out.status.code(), StatusCode::kInternal);
  EXPECT_NE(out.status.message().find("did not produce output 'OUT'"), std::string::npos);
}

// ---- Validate ----------------------------------------------------------------

class EnsembleValidateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.name = "ens";
    spec_.inputs = {Int32("INPUT")};
    spec_.outputs = {Int32("OUTPUT")};
  }
  Status Check(std::vector<EnsembleStep> steps) {
    config_.ensemble_steps = std::move(steps);
    return EnsembleScheduler::Validate(spec_, config_);
  }
  ModelSpec spec_;
  SchedulerConfig config_;
};

TEST_F(EnsembleValidateTest, AValidPipelinePasses) {
  EXPECT_TRUE(Check({Step("a", "t1", "OUTPUT"), Step("b", "INPUT", "t1")}).ok());
}

TEST_F(EnsembleValidateTest, NoStepsIsRefused) {
  Status s = Check({});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ensemble_scheduling.step"), std::string::npos);
}

TEST_F(EnsembleValidateTest, AnInputNobodyProvidesIsNamed) {
  Status s = Check({Step("a", "INPUT", "t1"), Step("b", "missing", "OUTPUT")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'missing'"), std::string::npos);
  EXPECT_NE(s.message().find("step 1 ('b')"), std::string::npos);
}

TEST_F(EnsembleValidateTest, ATensorProducedTwiceIsNamed) {
  Status s = Check({Step("a", "INPUT", "t1"), Step("b", "INPUT", "t1"), Step("c", "t1", "OUTPUT")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'t1' is produced more than once"), std::string::npos);
}

TEST_F(EnsembleValidateTest, OverwritingAnEnsembleInputIsRefused) {
  Status s = Check({Step("a", "INPUT", "INPUT"), Step("b", "INPUT", "OUTPUT")});
  EXPECT_NE(s.message().find("'INPUT' is produced more than once"), std::string::npos);
}

TEST_F(EnsembleValidateTest, AnOutputNoStepProducesIsNamed) {
  Status s = Check({Step("a", "INPUT", "t1")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("output 'OUTPUT' is not produced"), std::string::npos);
}

TEST_F(EnsembleValidateTest, ACycleIsRefusedNamingTheTensorItWaitsFor) {
  Status s = Check({Step("a", "t2", "t1"), Step("b", "t1", "t2"), Step("c", "INPUT", "OUTPUT")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs tensor 't2'"), std::string::npos);
}

}  // namespace
}  // namespace inferd
