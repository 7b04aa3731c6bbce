// Delayed unloads (--model-unload-delay-secs): the plan's decisions, and the
// manager on an in-memory repository with a fake clock the test moves (no
// test waits for a delay to pass).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "model_manager_fixture.h"
#include "repository/lifecycle_plan.h"
#include "repository/model_manager.h"
#include "repository/repository_poller.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;
using Kind = LifecycleRequest::Kind;

// ---- the plan -------------------------------------------------------------------

LoadedModel Model(ModelState state, const std::string& fingerprint = "fp") {
  LoadedModel m;
  m.versions[1] = VersionStatus{state, ""};
  m.fingerprint = fingerprint;
  return m;
}

LifecycleRequest Request(Kind kind, std::vector<std::string> names, bool delay) {
  LifecycleRequest r{kind, std::move(names), false, false};
  r.delay_unload = delay;
  return r;
}

TEST(UnloadDelayPlanTest, AnUnloadOfAServingModelIsDelayedOnce) {
  const LoadedModels ready{{"m", Model(ModelState::kReady)}};
  auto plans = PlanModels(Request(Kind::kUnload, {"m"}, true), {}, ready);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].action, ModelAction::kUnload);
  EXPECT_TRUE(plans[0].delay);
  EXPECT_EQ(plans[0].retire, (std::set<int64_t>{1}));

  // Without the delay: at once, as before.
  EXPECT_FALSE(PlanModels(Request(Kind::kUnload, {"m"}, false), {}, ready)[0].delay);

  // Already UNLOADING: the pending unload stands.
  const LoadedModels unloading{{"m", Model(ModelState::kUnloading)}};
  EXPECT_EQ(PlanModels(Request(Kind::kUnload, {"m"}, true), {}, unloading)[0].action,
            ModelAction::kKeep);
  // When it is due (no delay asked), every serving version is retired.
  auto due = PlanModels(Request(Kind::kUnload, {"m"}, false), {}, unloading);
  EXPECT_EQ(due[0].action, ModelAction::kUnload);
  EXPECT_FALSE(due[0].delay);
  EXPECT_EQ(due[0].retire, (std::set<int64_t>{1}));
  auto forget = PlanModels(Request(Kind::kForget, {"m"}, false), {}, unloading);
  EXPECT_EQ(forget[0].action, ModelAction::kForget);
  EXPECT_EQ(forget[0].retire, (std::set<int64_t>{1}));

  // Nothing serves (a failed model): nothing to wait for.
  const LoadedModels failed{{"m", Model(ModelState::kUnavailable)}};
  auto now = PlanModels(Request(Kind::kUnload, {"m"}, true), {}, failed);
  EXPECT_EQ(now[0].action, ModelAction::kUnload);
  EXPECT_FALSE(now[0].delay);
}

TEST(UnloadDelayPlanTest, PollForgetsLaterAndALoadOrRelistingCancels) {
  const LoadedModels ready{{"m", Model(ModelState::kReady)}};
  auto removed = PlanModels(Request(Kind::kPoll, {}, true), {}, ready);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].action, ModelAction::kForget);
  EXPECT_TRUE(removed[0].delay);

  const LoadedModels unloading{{"m", Model(ModelState::kUnloading)}};
  EXPECT_EQ(PlanModels(Request(Kind::kPoll, {}, true), {}, unloading)[0].action,
            ModelAction::kKeep);

  // Listed again, unchanged: kept, READY again.
  const SourceModels same{{"m", SourceModel{"", "fp"}}};
  auto back = PlanModels(Request(Kind::kPoll, {}, true), same, unloading);
  EXPECT_EQ(back[0].action, ModelAction::kKeep);
  EXPECT_TRUE(back[0].cancel_unload);
  // Listed again, changed: loaded, the unload cancelled first.
  const SourceModels changed{{"m", SourceModel{"", "fp2"}}};
  auto reload = PlanModels(Request(Kind::kPoll, {}, true), changed, unloading);
  EXPECT_EQ(reload[0].action, ModelAction::kLoad);
  EXPECT_TRUE(reload[0].cancel_unload);
  // An explicit load of the unchanged model: kept, READY again.
  auto load = PlanModels(Request(Kind::kLoad, {"m"}, true), same, unloading);
  EXPECT_EQ(load[0].action, ModelAction::kKeep);
  EXPECT_TRUE(load[0].cancel_unload);
  EXPECT_FALSE(PlanModels(Request(Kind::kLoad, {"m"}, true), same, ready)[0].cancel_unload);
}

TEST(UnloadDelayPlanTest, MarkAndCancel) {
  LoadedModel m = Model(ModelState::kReady);
  m.versions[2] = VersionStatus{ModelState::kUnavailable, "unloaded"};
  MarkUnloading(m);
  EXPECT_EQ(m.versions[1].state, ModelState::kUnloading);
  EXPECT_EQ(m.versions[2].state, ModelState::kUnavailable);
  EXPECT_TRUE(IsUnloading(m));
  EXPECT_TRUE(IsServing(m));
  EXPECT_EQ(m.fingerprint, "fp") << "a relisted unchanged model is not reloaded";
  CancelUnloading(m);
  EXPECT_EQ(m.versions[1].state, ModelState::kReady);
  EXPECT_FALSE(IsUnloading(m));
}

// ---- the manager ----------------------------------------------------------------

std::string AddSub(const std::string& name) { return testing::AddSubConfig(name); }

// What an asynchronous unload was answered, once it is.
struct Answer {
  std::promise<Status> promise;
  std::future<Status> future = promise.get_future();
  ModelManager::UnloadDone Callback() {
    return [this](Status s) { promise.set_value(std::move(s)); };
  }
  bool Answered() { return future.wait_for(0s) == std::future_status::ready; }
  // The delayer answers on its own thread: bounded wait.
  Status Get() {
    EXPECT_EQ(future.wait_for(30s), std::future_status::ready);
    return future.get();
  }
};

class UnloadDelayTest : public testing::ModelManagerFixture {
 protected:
  ModelManager& Make(ModelControlMode mode, std::chrono::seconds delay) {
    ModelManager& m = NewManager(mode, delay);
    EXPECT_TRUE(m.LoadStartupModels().ok());
    if (mode == ModelControlMode::kExplicit) {
      EXPECT_TRUE(m.Load("m", std::nullopt).ok());
    }
    return m;
  }

  ModelState State(const std::string& name) {
    for (const auto& e : manager_->Index(false)) {
      if (e.name == name) return e.state;
    }
    return ModelState::kUnknown;
  }
  bool Listed(const std::string& name) {
    for (const auto& e : manager_->Index(false)) {
      if (e.name == name) return true;
    }
    return false;
  }
  // For what the delayer thread does with no one waiting (poll mode):
  // a bounded wait for `done`.
  template <typename Pred>
  bool Eventually(Pred done) {
    for (int i = 0; i < 10000 && !done(); ++i) std::this_thread::sleep_for(1ms);
    return done();
  }
};

TEST_F(UnloadDelayTest, UnloadingServesUntilTheDelayThenUnloads) {
  ModelManager& m = Make(ModelControlMode::kExplicit, 10s);
  auto serving = m.Get("m", -1);
  ASSERT_TRUE(serving.ok());

  Answer unload, second;
  m.Unload("m", unload.Callback());
  EXPECT_FALSE(unload.Answered()) << "the unload returns when the model is unloaded";
  EXPECT_EQ(State("m"), ModelState::kUnloading);
  EXPECT_TRUE(m.Index(true).empty()) << "not in the ready index";
  EXPECT_FALSE(m.IsReady("m", -1));
  EXPECT_FALSE(m.IsReady("m", 1));
  EXPECT_TRUE(m.AllReady()) << "an UNLOADING model does not make the server unready";
  ASSERT_TRUE(m.Get("m", -1).ok()) << "still serving";
  EXPECT_EQ(*m.Get("m", -1), *serving);
  EXPECT_TRUE(m.Get("m", 1).ok());
  EXPECT_EQ(m.ServingVersions("m"), (std::vector<int64_t>{1}));

  m.Unload("m", second.Callback());  // waits for the same pending unload
  clock_.Advance(9s);
  EXPECT_FALSE(unload.Answered());
  EXPECT_EQ(State("m"), ModelState::kUnloading);

  clock_.Advance(1s);
  EXPECT_TRUE(unload.Get().ok());
  EXPECT_TRUE(second.Get().ok());
  EXPECT_EQ(State("m"), ModelState::kUnavailable);
  EXPECT_EQ(m.Get("m", -1).status().message(),
            "Request for unknown model: 'm' has no available versions");
}

TEST_F(UnloadDelayTest, ALoadDuringTheDelayCancelsTheUnload) {
  ModelManager& m = Make(ModelControlMode::kExplicit, 10s);
  auto serving = *m.Get("m", -1);
  Answer unload;
  m.Unload("m", unload.Callback());
  ASSERT_EQ(State("m"), ModelState::kUnloading);

  ASSERT_TRUE(m.Load("m", std::nullopt).ok());
  Status s = unload.Get();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("cancelled"), std::string::npos) << s.message();
  EXPECT_EQ(State("m"), ModelState::kReady);
  EXPECT_TRUE(m.IsReady("m", -1));
  EXPECT_EQ(*m.Get("m", -1), serving) << "READY again without a reload";

  clock_.Advance(60s);
  EXPECT_EQ(State("m"), ModelState::kReady) << "the cancelled unload never happens";

  // A later unload gets a fresh delay.
  Answer again;
  m.Unload("m", again.Callback());
  clock_.Advance(5s);
  EXPECT_FALSE(again.Answered());
  clock_.Advance(5s);
  EXPECT_TRUE(again.Get().ok());
}

TEST_F(UnloadDelayTest, ALoadWithANewConfigCancelsAndReloads) {
  ModelManager& m = Make(ModelControlMode::kExplicit, 10s);
  Answer unload;
  m.Unload("m", unload.Callback());
  ASSERT_TRUE(m.Load("m", R"({"backend":"add_sub",)"
                          R"("input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[4]},)"
                          R"({"name":"INPUT1","data_type":"TYPE_FP32","dims":[4]}],)"
                          R"("output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4]},)"
                          R"({"name":"OUTPUT1","data_type":"TYPE_FP32","dims":[4]}]})")
                  .ok());
  EXPECT_EQ(unload.Get().code(), StatusCode::kAborted);
  EXPECT_EQ(State("m"), ModelState::kReady);
}

TEST_F(UnloadDelayTest, ShutdownEndsTheDelay) {
  ModelManager& m = Make(ModelControlMode::kExplicit, 3600s);
  Answer unload;
  m.Unload("m", unload.Callback());
  m.EndUnloadDelays();  // the clock does not move
  EXPECT_TRUE(unload.Get().ok());
  EXPECT_EQ(State("m"), ModelState::kUnavailable);

  // Later unloads are not delayed either.
  ASSERT_TRUE(m.Load("m", std::nullopt).ok());
  EXPECT_TRUE(m.Unload("m").ok());
}

TEST_F(UnloadDelayTest, DestroyingTheManagerAnswersAPendingUnload) {
  Make(ModelControlMode::kExplicit, 3600s);
  Answer unload;
  manager_->Unload("m", unload.Callback());
  manager_.reset();
  EXPECT_TRUE(unload.Get().ok());
}

TEST_F(UnloadDelayTest, WithoutADelayUnloadIsImmediate) {
  ModelManager& m = Make(ModelControlMode::kExplicit, 0s);
  Answer unload;
  m.Unload("m", unload.Callback());
  ASSERT_TRUE(unload.Answered());
  EXPECT_TRUE(unload.Get().ok());
  EXPECT_EQ(State("m"), ModelState::kUnavailable);
}

TEST_F(UnloadDelayTest, PollRemovalIsDelayedAndRelistingCancelsIt) {
  ModelManager& m = Make(ModelControlMode::kPoll, 40s);
  uint64_t passes = 0;
  poller_ = std::make_unique<RepositoryPoller>(&clock_, 15s, [&m] { m.PollOnce(); });
  auto pass = [&] {
    clock_.Advance(15s);
    passes = poller_->AwaitPass(passes);
  };
  ASSERT_EQ(State("m"), ModelState::kReady);

  source_->RemoveModel("m");
  pass();  // t = 15: removed, UNLOADING until t = 55
  EXPECT_EQ(State("m"), ModelState::kUnloading);
  EXPECT_TRUE(m.Get("m", -1).ok());
  pass();  // t = 30: still removed; the pending unload stands
  EXPECT_EQ(State("m"), ModelState::kUnloading);

  source_->SetModel("m", AddSub("m"), {1});
  pass();  // t = 45: back, unchanged: READY again
  EXPECT_EQ(State("m"), ModelState::kReady);
  EXPECT_TRUE(m.IsReady("m", -1));

  source_->RemoveModel("m");
  pass();  // t = 60: removed again, UNLOADING until t = 100
  EXPECT_EQ(State("m"), ModelState::kUnloading);
  pass();  // t = 75
  pass();  // t = 90
  EXPECT_EQ(State("m"), ModelState::kUnloading);
  clock_.Advance(10s);  // t = 100: forgotten, as a removal without a delay
  EXPECT_TRUE(Eventually([&] { return !Listed("m"); }));
  EXPECT_EQ(m.Get("m", -1).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace inferd
