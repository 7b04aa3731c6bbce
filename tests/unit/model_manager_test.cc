#include "repository/model_manager.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "repository/repository_source_factory.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

constexpr const char* kIdentity = R"(
backend: "identity"
max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }]
)";

class ModelManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("inferd_mm_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    AddModel("id", kIdentity, {1, 2});
    registry_ = BackendRegistry::WithBuiltins();
  }
  void TearDown() override { fs::remove_all(root_); }

  void AddModel(const std::string& name, const std::string& config, std::vector<int> versions) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "config.pbtxt") << config;
    for (int v : versions) fs::create_directories(root_ / name / std::to_string(v));
  }

  std::unique_ptr<ModelManager> Make(ModelControlMode mode, std::vector<std::string> startup = {}) {
    ModelManagerOptions o;
    o.source = MakeRepositorySource({root_.string()});
    o.clock = RealClock::Get();
    o.mode = mode;
    o.startup_models = std::move(startup);
    o.registry = registry_.get();
    return std::make_unique<ModelManager>(o);
  }

  fs::path root_;
  std::unique_ptr<BackendRegistry> registry_;
};

TEST_F(ModelManagerTest, LoadsLatestVersionAndAnswersLookups) {
  auto m = Make(ModelControlMode::kNone);
  ASSERT_TRUE(m->LoadStartupModels().ok());
  auto v = m->Get("id", -1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)->version(), 2);
  EXPECT_EQ(m->Get("id", 1).status().code(), StatusCode::kNotFound);
  auto unknown = m->Get("nope", -1);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message().rfind("Request for unknown model", 0), 0u);
  EXPECT_TRUE(m->AllReady());
}

TEST_F(ModelManagerTest, FailedModelIsUnavailableAndOthersServe) {
  AddModel("broken",
           "backend: \"add_sub\"\ninput [{ name: \"INPUT0\" data_type: TYPE_BOOL dims: [1] }]",
           {1});
  auto m = Make(ModelControlMode::kNone);
  EXPECT_FALSE(m->LoadStartupModels().ok());
  EXPECT_TRUE(m->Get("id", -1).ok());
  EXPECT_FALSE(m->AllReady());
  bool found = false;
  for (const auto& e : m->Index(false)) {
    if (e.name == "broken") {
      found = true;
      EXPECT_EQ(e.state, ModelState::kUnavailable);
      EXPECT_FALSE(e.reason.empty());
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(ModelManagerTest, ExplicitLoadAndUnload) {
  auto m = Make(ModelControlMode::kExplicit);
  ASSERT_TRUE(m->LoadStartupModels().ok());
  EXPECT_FALSE(m->Get("id", -1).ok());
  ASSERT_TRUE(m->Load("id", std::nullopt).ok());
  EXPECT_TRUE(m->Get("id", -1).ok());
  ASSERT_TRUE(m->Unload("id").ok());
  EXPECT_FALSE(m->Get("id", -1).ok());
  EXPECT_FALSE(m->Load("../etc", std::nullopt).ok());
  EXPECT_FALSE(m->Load("missing", std::nullopt).ok());
}

TEST_F(ModelManagerTest, PollPicksUpNewVersionsAndRemovedModels) {
  auto m = Make(ModelControlMode::kPoll);
  ASSERT_TRUE(m->LoadStartupModels().ok());
  fs::create_directories(root_ / "id" / "3");
  AddModel("later", kIdentity, {1});
  m->PollOnce();
  auto v = m->Get("id", -1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)->version(), 3);
  EXPECT_TRUE(m->Get("later", -1).ok());
  fs::remove_all(root_ / "later");
  m->PollOnce();
  EXPECT_EQ(m->Get("later", -1).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace inferd
