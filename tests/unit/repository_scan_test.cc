#include "repository/repository_scan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "repository/local_repository_source.h"
#include "repository/repository_source_factory.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

class RepositoryScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("inferd_scan_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "repo");
    fs::create_directories(root_ / "outside" / "1");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(RepositoryScanTest, FindsModelsAndVersions) {
  fs::create_directories(root_ / "repo" / "a" / "1");
  fs::create_directories(root_ / "repo" / "a" / "12");
  fs::create_directories(root_ / "repo" / "a" / "01");      // leading zero: ignored
  fs::create_directories(root_ / "repo" / "a" / "warmup");  // not a version
  fs::create_directories(root_ / "repo" / ".hidden");
  std::ofstream(root_ / "repo" / "file.txt") << "x";
  LocalRepositorySource source((root_ / "repo").string());
  auto scan = source.ListModels();
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->size(), 1u);
  EXPECT_TRUE(scan->at("a").problem.empty());
  auto versions = source.ListVersions("a");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(*versions, std::set<int64_t>({1, 12}));
  const SymlinkRules rules({(root_ / "repo").string()}, false);
  EXPECT_EQ(ScanVersions(scan->at("a").location, rules).value(), std::set<int64_t>({1, 12}));
}

TEST_F(RepositoryScanTest, SymlinkOutOfRepositoryIsRefused) {
  fs::create_directory_symlink(root_ / "outside", root_ / "repo" / "escape");
  auto scan = LocalRepositorySource((root_ / "repo").string()).ListModels();
  ASSERT_TRUE(scan.ok());
  ASSERT_EQ(scan->count("escape"), 1u);
  EXPECT_EQ(scan->at("escape").problem,
            "model directory 'escape' is a symbolic link to '" +
                fs::canonical(root_ / "outside").string() +
                "', outside every model repository; start inferd with "
                "--repository-follow-external-symlinks=true to follow it");
}

TEST_F(RepositoryScanTest, DuplicateAcrossRepositoriesIsAProblem) {
  fs::create_directories(root_ / "repo" / "m" / "1");
  fs::create_directories(root_ / "repo2" / "m" / "1");
  auto scan =
      MakeRepositorySource({(root_ / "repo").string(), (root_ / "repo2").string()})->ListModels();
  ASSERT_TRUE(scan.ok());
  EXPECT_NE(scan->at("m").problem.find("more than one"), std::string::npos);
}

TEST_F(RepositoryScanTest, MissingRepositoryIsAnError) {
  EXPECT_FALSE(MakeRepositorySource({(root_ / "nope").string()})->ListModels().ok());
  EXPECT_FALSE(MakeRepositorySource({(root_ / "repo").string(), (root_ / "nope").string()})
                   ->ListModels()
                   .ok());
}

TEST(ModelNameTest, RefusesEscapingNames) {
  EXPECT_TRUE(IsValidModelName("simple"));
  EXPECT_TRUE(IsValidModelName("resnet50.v1"));
  EXPECT_FALSE(IsValidModelName(""));
  EXPECT_FALSE(IsValidModelName(".."));
  EXPECT_FALSE(IsValidModelName("a/b"));
  EXPECT_FALSE(IsValidModelName("a..b"));
  EXPECT_FALSE(IsValidModelName(std::string("a\0b", 3)));
  EXPECT_FALSE(IsValidModelName(std::string(300, 'a')));
}

}  // namespace
}  // namespace inferd
