// The model lifecycle end to end inside the process, without sleeping: the
// manager on an in-memory repository the test changes, the poller on a fake
// clock the test moves.
#include <gtest/gtest.h>

#include <atomic>

#include "model_manager_fixture.h"
#include "repository/model_config_util.h"
#include "repository/model_manager.h"
#include "repository/repository_poller.h"

namespace inferd {
namespace {

using namespace std::chrono_literals;

std::string AddSub(const std::string& name, const std::string& dtype = "TYPE_FP32",
                   const std::string& extra = "") {
  return testing::AddSubConfig(name, dtype, extra);
}

class ModelLifecycleTest : public testing::ModelManagerFixture {
 protected:
  ModelManager& Make(ModelControlMode mode) { return NewManager(mode); }

  std::shared_ptr<ModelVersion> Serving(const std::string& name) {
    auto v = manager_->Get(name, -1);
    return v.ok() ? *v : nullptr;
  }
};

TEST_F(ModelLifecycleTest, PollPicksUpNewVersionsNewModelsAndRemovals) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  auto first = Serving("m");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->version(), 1);

  source_->SetModel("m", AddSub("m"), {1, 2});
  source_->SetModel("later", AddSub("later"), {3});
  EXPECT_EQ(Serving("m"), first) << "nothing changes before the clock reaches the interval";
  PollPass();
  ASSERT_NE(Serving("m"), nullptr);
  EXPECT_EQ(Serving("m")->version(), 2);
  ASSERT_NE(Serving("later"), nullptr);
  EXPECT_EQ(Serving("later")->version(), 3);
  std::vector<std::pair<std::optional<int64_t>, ModelState>> states;
  for (const auto& e : Entries("m")) states.emplace_back(e.version, e.state);
  EXPECT_EQ(states, (std::vector<std::pair<std::optional<int64_t>, ModelState>>{
                        {1, ModelState::kUnavailable}, {2, ModelState::kReady}}));
  EXPECT_EQ(Entries("m")[0].reason, "unloaded");

  source_->RemoveModel("later");
  PollPass();
  EXPECT_EQ(manager_->Get("later", -1).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(manager_->Knows("later"));
  EXPECT_TRUE(Entries("later").empty());
  EXPECT_TRUE(manager_->AllReady());
}

TEST_F(ModelLifecycleTest, AFailedFetchIsTriedAgainAtTheNextPoll) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  auto first = Serving("m");
  ASSERT_NE(first, nullptr);
  // Version 2 appears, and its download fails once (a store that answered
  // 503); the next pass, with nothing changed in the repository, tries
  // again and loads version 2.
  source_->SetModel("m", AddSub("m"), {1, 2});
  source_->FailNextMaterialize(Unavailable("server error from the store (503)"));
  PollPass();
  auto after_failure = Serving("m");
  EXPECT_TRUE(after_failure == nullptr || after_failure->version() == 1);
  PollPass();
  ASSERT_NE(Serving("m"), nullptr);
  EXPECT_EQ(Serving("m")->version(), 2);
  // Settled: a further pass loads nothing.
  const size_t calls = source_->materialized().size();
  PollPass();
  EXPECT_EQ(source_->materialized().size(), calls);
}

TEST_F(ModelLifecycleTest, ABrokenConfigIsNotReadAgainUntilTheModelChanges) {
  source_->SetModel("badconfig", "max_batch_size: -1", {1});
  Make(ModelControlMode::kPoll);
  EXPECT_FALSE(manager_->LoadStartupModels().ok());
  StartPolling();
  const int reads = source_->reads("badconfig");
  PollPass();
  PollPass();
  EXPECT_EQ(source_->reads("badconfig"), reads) << "a remote store would be asked every pass";
  source_->SetModel("badconfig", AddSub("badconfig"), {1});  // fixed
  PollPass();
  EXPECT_NE(Serving("badconfig"), nullptr);
}

TEST_F(ModelLifecycleTest, AConfigTheSourceCouldNotReadIsReadAgainNextPass) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  source_->SetModel("later", AddSub("later"), {1});
  source_->SetReadError(Unavailable("cannot reach the store"));
  PollPass();
  EXPECT_EQ(Serving("later"), nullptr);
  source_->SetReadError(Status::Ok());
  PollPass();
  EXPECT_NE(Serving("later"), nullptr)
      << "nothing changed, but the read failed for a passing reason";
}

TEST_F(ModelLifecycleTest, UnchangedModelIsNotReloaded) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  auto first = Serving("m");
  PollPass();
  PollPass();
  EXPECT_EQ(Serving("m"), first);
  EXPECT_EQ(source_->materialized().size(), 1u);
}

TEST_F(ModelLifecycleTest, FailedReloadKeepsTheOldVersionServing) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  auto first = Serving("m");

  source_->SetModel("m", "name: \"m\"\ninput [ { name: \n", {1});  // unparsable
  PollPass();
  EXPECT_EQ(Serving("m"), first);
  auto entries = Entries("m");
  ASSERT_EQ(entries.size(), 1u);  // no model-level failure while a version serves
  EXPECT_EQ(entries[0].state, ModelState::kReady);
  EXPECT_EQ(manager_->LoadFailureCounts()["m"], 1u);

  source_->SetModel("m", AddSub("m", "TYPE_BOOL"), {1});  // parses, fails in the backend
  PollPass();
  EXPECT_EQ(Serving("m"), first);
  EXPECT_EQ(manager_->LoadFailureCounts()["m"], 2u);

  source_->SetModel("m", AddSub("m", "TYPE_INT32"), {1});  // fixed
  PollPass();
  ASSERT_NE(Serving("m"), nullptr);
  EXPECT_NE(Serving("m"), first);
  EXPECT_EQ(Serving("m")->spec().inputs[0].datatype, DataType::kInt32);
}

TEST_F(ModelLifecycleTest, FailedModelIsUnavailableWithItsReasonAndOthersServe) {
  source_->SetModel("broken", AddSub("broken", "TYPE_BOOL"), {1});
  source_->SetModel("badconfig", "max_batch_size: -1", {1});
  source_->SetModel("dup", AddSub("dup"), {1});
  source_->SetProblem("dup", "model appears in more than one model repository");
  Make(ModelControlMode::kNone);
  Status s = manager_->LoadStartupModels();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(Serving("m"), nullptr);
  EXPECT_FALSE(manager_->AllReady());

  auto broken = Entries("broken");
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_EQ(broken[0].version, std::optional<int64_t>(1));
  EXPECT_EQ(broken[0].state, ModelState::kUnavailable);
  EXPECT_FALSE(broken[0].reason.empty());
  auto badconfig = Entries("badconfig");
  ASSERT_EQ(badconfig.size(), 1u);
  EXPECT_EQ(badconfig[0].version, std::nullopt);
  EXPECT_EQ(badconfig[0].reason, "badconfig/config.pbtxt: 'max_batch_size' must be >= 0, got -1");
  auto dup = Entries("dup");
  ASSERT_EQ(dup.size(), 1u);
  EXPECT_EQ(dup[0].reason, "model appears in more than one model repository");
}

TEST_F(ModelLifecycleTest, DecoupledModelsLoadAndSayWhatTheyAre) {
  source_->SetModel("stream",
                    AddSub("stream", "TYPE_FP32", "model_transaction_policy { decoupled: true }\n"),
                    {1});
  Make(ModelControlMode::kExplicit);
  ASSERT_TRUE(manager_->Load("stream", std::nullopt).ok());
  auto v = Serving("stream");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->spec().decoupled);
  EXPECT_EQ(Entries("stream").at(0).state, ModelState::kReady);
}

TEST_F(ModelLifecycleTest, ExplicitLoadUnloadAndConfigOverride) {
  source_->SetModel("m", AddSub("m"), {1, 2});
  Make(ModelControlMode::kExplicit);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  ASSERT_EQ(Entries("m").size(), 1u);
  EXPECT_EQ(Entries("m")[0].state, ModelState::kUnknown);  // listed, never loaded

  ASSERT_TRUE(manager_->Load("m", std::nullopt).ok());
  auto first = Serving("m");
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(manager_->Load("m", std::nullopt).ok());
  EXPECT_EQ(Serving("m"), first) << "a second load of an unchanged model is a no-op";

  const std::string override_json =
      R"({"backend":"add_sub","version_policy":{"all":{}},)"
      R"("input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[4]},)"
      R"({"name":"INPUT1","data_type":"TYPE_FP32","dims":[4]}],)"
      R"("output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4]},)"
      R"({"name":"OUTPUT1","data_type":"TYPE_FP32","dims":[4]}]})";
  ASSERT_TRUE(manager_->Load("m", override_json).ok());
  EXPECT_EQ(manager_->ServingVersions("m"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(source_->materialized().back().second, (std::set<int64_t>{1, 2}));

  auto held = Serving("m");
  ASSERT_TRUE(manager_->Unload("m").ok());
  EXPECT_EQ(manager_->Get("m", -1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(manager_->Get("m", 2).status().code(), StatusCode::kUnavailable);
  for (const auto& e : Entries("m")) {
    EXPECT_EQ(e.state, ModelState::kUnavailable);
    EXPECT_EQ(e.reason, "unloaded");
  }
  EXPECT_TRUE(manager_->AllReady()) << "unloaded versions do not make the server unready";
  EXPECT_TRUE(manager_->Unload("never").ok());
  EXPECT_EQ(manager_->Load("../m", std::nullopt).message(), "invalid model name '../m'");
}

TEST_F(ModelLifecycleTest, UnreadableRepositoryFailsStartupAndPollingWaitsItOut) {
  Make(ModelControlMode::kPoll);
  ASSERT_TRUE(manager_->LoadStartupModels().ok());
  StartPolling();
  auto first = Serving("m");
  source_->SetListingError(InvalidArgument("model repository 'x' is not a directory"));
  source_->SetModel("m", AddSub("m"), {1, 2});
  PollPass();
  EXPECT_EQ(Serving("m"), first) << "an unreadable repository changes nothing";
  source_->SetListingError(Status::Ok());
  PollPass();
  EXPECT_EQ(Serving("m")->version(), 2);

  poller_.reset();
  source_->SetListingError(InvalidArgument("model repository 'x' is not a directory"));
  EXPECT_EQ(Make(ModelControlMode::kNone).LoadStartupModels().message(),
            "model repository 'x' is not a directory");
}

TEST(RepositoryPollerTest, PassesFollowTheClock) {
  testing::FakeClock clock;
  std::atomic<int> calls{0};
  RepositoryPoller poller(&clock, 10s, [&] { ++calls; });
  clock.Advance(9s);
  clock.Advance(1s);
  EXPECT_EQ(poller.AwaitPass(0), 1u);
  EXPECT_EQ(calls.load(), 1);
  clock.Advance(10s);
  EXPECT_EQ(poller.AwaitPass(1), 2u);
  EXPECT_EQ(calls.load(), 2);
  poller.Stop();  // wakes the waiting thread without moving the clock
  EXPECT_EQ(poller.AwaitPass(5), 2u) << "a stopped poller answers at once";
  EXPECT_EQ(calls.load(), 2);
}

TEST(DecoupledConfigTest, NormalisationKeepsTheTransactionPolicy) {
  inference::ModelConfig config;
  config.set_backend("add_sub");
  config.mutable_model_transaction_policy()->set_decoupled(true);
  ASSERT_TRUE(NormalizeModelConfig("stream", NormalizeOptions{}, config).ok());
  EXPECT_TRUE(SpecFromConfig(config).decoupled);
}

}  // namespace
}  // namespace inferd
