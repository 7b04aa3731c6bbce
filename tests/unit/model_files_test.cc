// Model files given with a load call (Triton's "file:" override): the path
// rules, writing the private directory, and its lifetime in the model
// manager (it lives as long as a version loaded from it).
#include "repository/model_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_clock.h"
#include "fake_repository_source.h"
#include "repository/model_manager.h"

namespace inferd {
namespace {

namespace fs = std::filesystem;

TEST(ModelFilesTest, PathRules) {
  struct Row {
    std::string path;
    std::string problem;  // "" = accepted
  };
  const Row rows[] = {
      {"1/model.onnx", ""},
      {"0/a/b/c.bin", ""},
      {"12/.hidden", ""},
      {"", "the path is empty"},
      {"/etc/passwd", "absolute paths are not allowed"},
      {"1/../../etc/passwd", "'.' and '..' components are not allowed"},
      {"1/./model", "'.' and '..' components are not allowed"},
      {"1//model", "empty path component"},
      {"1/model/", "empty path component"},
      {"1/a\\b", "control characters and '\\' are not allowed"},
      {std::string("1/a\0b", 5), "control characters and '\\' are not allowed"},
      {"1/a\nb", "control characters and '\\' are not allowed"},
      {"model.onnx", "the first path component must be a version number"},
      {"01/model", "the first path component must be a version number"},
      {"-1/model", "the first path component must be a version number"},
      {"1x/model", "the first path component must be a version number"},
      {"1234567890123456789/model", "the first path component must be a version number"},
      {"1", "the path must name a file inside a version directory"},
      {"1/" + std::string(256, 'a'), "a path component is longer than 255 bytes"},
      {"1/" + std::string(1100, 'a'), "the path is longer than 1024 bytes"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.path);
    Status s = CheckModelFilePath(row.path);
    if (row.problem.empty()) {
      EXPECT_TRUE(s.ok()) << s.message();
      continue;
    }
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind("invalid load parameter 'file:", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(row.problem), std::string::npos) << s.message();
  }
}

TEST(ModelFilesTest, SetRules) {
  EXPECT_TRUE(CheckModelFiles({{"1/a", "x"}, {"1/b/c", "y"}, {"2/a", ""}}).ok());
  Status s = CheckModelFiles({{"1/a", "x"}, {"1/a/b", "y"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "invalid load parameter 'file:1/a': the path is both a file and the directory of "
            "'file:1/a/b'");
  // "1/a.b" sorts between "1/a" and "1/a/b": still found.
  EXPECT_FALSE(CheckModelFiles({{"1/a", "x"}, {"1/a.b", "y"}, {"1/a/b", "z"}}).ok());
  EXPECT_TRUE(CheckModelFiles({{"1/a", "x"}, {"1/a.b/c", "y"}, {"1/ab", "z"}}).ok());
  ModelFiles many;
  for (size_t i = 0; i <= kMaxModelFiles; ++i) many["1/f" + std::to_string(i)] = "";
  s = CheckModelFiles(many);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("too many model files in one load"), std::string::npos);
}

TEST(ModelFilesTest, WritesAPrivateDirectoryRemovedWithTheObject) {
  std::string path;
  {
    auto dir = ModelFileDirectory::Write(
        {{"1/model.bin", std::string("\0\1\2", 3)}, {"3/sub/dir/weights", "w"}});
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    path = (*dir)->path();
    EXPECT_EQ((*dir)->versions(), (std::set<int64_t>{1, 3}));
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::ifstream in(path + "/1/model.bin", std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(content, std::string("\0\1\2", 3));
    EXPECT_TRUE(fs::is_regular_file(path + "/3/sub/dir/weights"));
  }
  EXPECT_FALSE(fs::exists(path));
  // Bad paths are refused before anything is written.
  auto bad = ModelFileDirectory::Write({{"1/ok", "x"}, {"1/../escape", "y"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

// ---- in the model manager ----------------------------------------------------

constexpr char kAddSubJson[] = R"({"backend":"add_sub","max_batch_size":0,
  "input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[4]},
           {"name":"INPUT1","data_type":"TYPE_FP32","dims":[4]}],
  "output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[4]},
            {"name":"OUTPUT1","data_type":"TYPE_FP32","dims":[4]}]})";

class ModelFilesManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    tmp_ = fs::temp_directory_path() / ("inferd_files_tmp_" + test);
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
    const char* old = std::getenv("TMPDIR");
    if (old != nullptr) old_tmpdir_ = old;
    ::setenv("TMPDIR", tmp_.c_str(), 1);  // where the manager writes model files
    source_ = std::make_shared<testing::FakeRepositorySource>(tmp_.string() + "_cache");
    source_->SetModel("m", "name: \"m\"\nbackend: \"no_such_backend\"\n", {1});
    registry_ = BackendRegistry::WithBuiltins();
    ModelManagerOptions o;
    o.source = source_;
    o.clock = &clock_;
    o.mode = ModelControlMode::kExplicit;
    o.registry = registry_.get();
    manager_ = std::make_unique<ModelManager>(o);
  }
  void TearDown() override {
    manager_.reset();
    if (old_tmpdir_) {
      ::setenv("TMPDIR", old_tmpdir_->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
    fs::remove_all(tmp_);
  }

  // The model-file directories that exist now.
  size_t Directories() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(tmp_)) {
      if (e.path().filename().string().rfind("inferd-model-files-", 0) == 0) ++n;
    }
    return n;
  }
  // The reaper stops retired versions on its own thread.
  bool DirectoriesBecome(size_t n) const {
    for (int i = 0; i < 500 && Directories() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Directories() == n;
  }

  fs::path tmp_;
  std::optional<std::string> old_tmpdir_;
  testing::FakeClock clock_;
  std::shared_ptr<testing::FakeRepositorySource> source_;
  std::unique_ptr<BackendRegistry> registry_;
  std::unique_ptr<ModelManager> manager_;
};

TEST_F(ModelFilesManagerTest, AModelOutsideTheRepositoryLoadsFromFilesUntilUnloaded) {
  ASSERT_EQ(manager_->Get("fresh", -1).status().code(), StatusCode::kNotFound);
  Status s = manager_->Load("fresh", kAddSubJson, {{"1/weights", "a"}, {"2/weights", "b"}});
  ASSERT_TRUE(s.ok()) << s.message();
  auto served = manager_->Get("fresh", -1);
  ASSERT_TRUE(served.ok());
  EXPECT_EQ((*served)->version(), 2);
  EXPECT_EQ(Directories(), 1u);
  served = Status(Internal("dropped"));  // the test's reference no longer holds the files

  // A second load with files replaces the first; the first directory goes
  // once its versions have stopped.
  s = manager_->Load("fresh", kAddSubJson, {{"3/weights", "c"}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ((*manager_->Get("fresh", -1))->version(), 3);
  EXPECT_TRUE(DirectoriesBecome(1));

  ASSERT_TRUE(manager_->Unload("fresh").ok());
  EXPECT_TRUE(DirectoriesBecome(0));
  // Without files the repository is asked again: it does not hold the model.
  s = manager_->Load("fresh", std::nullopt);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "failed to load 'fresh', failed to poll from model repository: no model of that "
            "name in the model repository");
}

TEST_F(ModelFilesManagerTest, FilesReplaceARepositoryModelAndGoAtShutdown) {
  // The repository's "m" names a backend that does not exist: a load failure.
  Status s = manager_->Load("m", std::nullopt);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("load failed for model 'm': ", 0), 0u) << s.message();
  s = manager_->Load("m", kAddSubJson, {{"1/weights", "a"}});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(manager_->Get("m", 1).ok());
  EXPECT_EQ(Directories(), 1u);
  manager_.reset();  // shutdown
  EXPECT_EQ(Directories(), 0u);
}

TEST_F(ModelFilesManagerTest, FailedLoadsLeaveNoDirectory) {
  // A config that does not parse: the model could not be read.
  Status s = manager_->Load("x", std::string("{not json"), {{"1/w", "a"}});
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message().rfind("failed to load 'x', failed to poll from model repository: ", 0), 0u)
      << s.message();
  // Read, but its backend cannot load it; the directory is not shown.
  std::string config = kAddSubJson;
  config.replace(config.find("add_sub"), 7, "no_such_backend");
  s = manager_->Load("x", config, {{"1/w", "a"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("load failed for model 'x': ", 0), 0u) << s.message();
  EXPECT_EQ(s.message().find(tmp_.string()), std::string::npos) << s.message();
  // No version under the policy: read, and failed to load.
  s = manager_->Load(
      "x", std::string(kAddSubJson).insert(1, R"("version_policy":{"specific":{"versions":[7]}},)"),
      {{"1/w", "a"}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at least one version must be available"), std::string::npos)
      << s.message();
  EXPECT_EQ(Directories(), 0u);
}

}  // namespace
}  // namespace inferd
