// LocalRepositorySource and CompositeRepositorySource beyond listing
// (repository_scan_test.cc): versions, fingerprints, reading one file,
// materialising, routing across repositories, paths to redact.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "repository/local_repository_source.h"
#include "repository/repository_source_factory.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

class RepositorySourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("inferd_source_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    Write("repo/a/config.pbtxt", "name: \"a\"");
    Write("repo/a/labels.txt", "cat\ndog\n");
    fs::create_directories(root_ / "repo" / "a" / "1");
    fs::create_directories(root_ / "repo2" / "b" / "7");
    Write("outside/secret.txt", "secret");
    fs::create_directories(root_ / "outside" / "9");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& content) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << content;
  }
  std::string Repo(const std::string& name = "repo") { return (root_ / name).string(); }

  fs::path root_;
};

TEST_F(RepositorySourceTest, LocalVersionsFilesAndMaterialize) {
  LocalRepositorySource source(Repo());
  fs::create_directory_symlink(root_ / "outside" / "9", root_ / "repo" / "a" / "9");
  auto refused = source.ListVersions("a");
  ASSERT_FALSE(refused.ok()) << "a version linked outside the repository fails the model";
  EXPECT_NE(refused.status().message().find("version directory '9'"), std::string::npos)
      << refused.status().message();
  fs::remove(root_ / "repo" / "a" / "9");
  auto versions = source.ListVersions("a");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(*versions, std::set<int64_t>{1});

  auto config = source.ReadFile("a", "config.pbtxt");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(*config, "name: \"a\"");
  EXPECT_EQ(source.ReadFile("a", "missing.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source.ReadFile("a", "../../outside/secret.txt").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(source.ReadFile("a", "/etc/passwd").status().code(), StatusCode::kInvalidArgument);

  auto dir = source.Materialize("a", {1});
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, fs::canonical(root_ / "repo" / "a").string());
}

TEST_F(RepositorySourceTest, LocalUnknownOrRefusedModelsAreNotFound) {
  LocalRepositorySource source(Repo());
  fs::create_directory_symlink(root_ / "outside", root_ / "repo" / "escape");
  fs::create_directories(root_ / "repo" / ".hidden" / "1");
  for (const char* name : {"nope", "escape", ".hidden", "..", "a/1"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(source.ListVersions(name).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(source.Fingerprint(name).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(source.ReadFile(name, "config.pbtxt").status().code(), StatusCode::kNotFound);
    EXPECT_EQ(source.Materialize(name, {1}).status().code(), StatusCode::kNotFound);
  }
}

TEST_F(RepositorySourceTest, FingerprintChangesWithContent) {
  LocalRepositorySource source(Repo());
  auto before = source.Fingerprint("a");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(source.Fingerprint("a").value(), *before);
  fs::create_directories(root_ / "repo" / "a" / "2");
  auto added = source.Fingerprint("a");
  EXPECT_NE(added.value(), *before);
  Write("repo/a/labels.txt", "cat\ndog\nbird\n");
  EXPECT_NE(source.Fingerprint("a").value(), added.value());
}

TEST_F(RepositorySourceTest, CompositeListsEveryRepositoryAndRoutesByModel) {
  auto source = MakeRepositorySource({Repo("repo"), Repo("repo2")});
  auto listed = source->ListModels();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ(listed->at("b").location, fs::canonical(root_ / "repo2" / "b").string());
  EXPECT_EQ(source->ListVersions("b").value(), std::set<int64_t>{7});
  EXPECT_EQ(source->ListVersions("a").value(), std::set<int64_t>{1});
  EXPECT_EQ(source->ReadFile("a", "labels.txt").value(), "cat\ndog\n");
  EXPECT_EQ(source->Materialize("b", {7}).value(), fs::canonical(root_ / "repo2" / "b").string());
  EXPECT_TRUE(source->Fingerprint("b").ok());
  EXPECT_EQ(source->Fingerprint("c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(MakeRepositorySource({})->ListModels().value().size(), 0u);
}

TEST_F(RepositorySourceTest, PathsToRedactCoverEachSpelling) {
  const std::string relative = fs::relative(root_ / "repo").string();
  auto paths = MakeRepositorySource({relative, Repo("repo2") + "/"})->PathsToRedact();
  auto has = [&](const std::string& p) {
    return std::find(paths.begin(), paths.end(), p) != paths.end();
  };
  EXPECT_TRUE(has(relative));
  EXPECT_TRUE(has(fs::canonical(root_ / "repo").string()));
  EXPECT_TRUE(has(Repo("repo2") + "/"));
  EXPECT_TRUE(has(fs::canonical(root_ / "repo2").string()));
}

}  // namespace
}  // namespace inferd
