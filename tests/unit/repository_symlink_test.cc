// The symbolic-link rule of repository scans (repository_scan.h): links
// whose target lies inside one of the server's repositories are followed;
// outside every repository only with --repository-follow-external-symlinks;
// dangling links and loops never, with a message naming the link. Also the
// check of a repository path at start and at each poll.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "repository/local_repository_source.h"
#include "repository/repository_scan.h"
#include "repository/repository_source_factory.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;

class RepositorySymlinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("inferd_symlink_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    Write("repo/m/config.pbtxt", "name: \"m\"");
    Write("repo/m/1/model.txt", "one");
    Write("repo/shared/7/model.txt", "seven");
    Write("repo2/other/3/model.txt", "three");
    Write("outside/5/model.txt", "five");
    Write("outside/model/config.pbtxt", "name: \"model\"");
    Write("outside/weights.bin", "weights");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& content) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << content;
  }
  void Link(const std::string& target, const std::string& link) {
    fs::create_symlink(target, root_ / link);
  }
  std::string P(const std::string& path) { return (root_ / path).string(); }
  std::string Canonical(const std::string& path) { return fs::canonical(root_ / path).string(); }
  // Both repositories; `follow` is the flag.
  std::shared_ptr<RepositorySource> Source(bool follow = false) {
    return MakeRepositorySource({P("repo"), P("repo2")}, follow);
  }
  static std::string Outside(const std::string& shown, const std::string& target) {
    return shown + " is a symbolic link to '" + target +
           "', outside every model repository; start inferd with "
           "--repository-follow-external-symlinks=true to follow it";
  }

  fs::path root_;
};

TEST_F(RepositorySymlinkTest, VersionLinksInsideAnyRepositoryAreFollowed) {
  Link("../shared/7", "repo/m/2");       // another model of the same repository
  Link(P("repo2/other/3"), "repo/m/3");  // the other repository, absolute
  Link("1", "repo/m/4");                 // a sibling version
  auto source = Source();
  EXPECT_EQ(source->ListVersions("m").value(), (std::set<int64_t>{1, 2, 3, 4}));
  auto fp = source->Fingerprint("m");
  ASSERT_TRUE(fp.ok()) << fp.status().message();
  EXPECT_NE(fp->find("2 -> ../shared/7"), std::string::npos) << *fp;
  EXPECT_NE(fp->find("2/model.txt:5"), std::string::npos) << "the linked content counts: " << *fp;
}

TEST_F(RepositorySymlinkTest, VersionLinkOutsideIsRefusedUnlessTheFlagIsGiven) {
  Link(P("outside/5"), "repo/m/5");
  const std::string why = Outside("version directory '5'", Canonical("outside/5"));
  auto versions = Source()->ListVersions("m");
  ASSERT_FALSE(versions.ok());
  EXPECT_EQ(versions.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(versions.status().message(), why);
  EXPECT_EQ(Source()->Fingerprint("m").status().message(), why);
  EXPECT_TRUE(Source()->ListModels().value().at("m").problem.empty())
      << "the model is listed; it fails when looked at";

  EXPECT_EQ(Source(true)->ListVersions("m").value(), (std::set<int64_t>{1, 5}));
  EXPECT_TRUE(Source(true)->Fingerprint("m").ok());
}

TEST_F(RepositorySymlinkTest, ModelDirectoryLinks) {
  Link("m", "repo/alias");                           // inside: a second name for the same model
  Link(P("outside/model"), "repo/ext");              // outside
  Link(P("outside/weights.bin"), "repo/file_link");  // to a file: not a model at all
  auto listed = Source()->ListModels();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->at("alias").problem.empty());
  EXPECT_EQ(listed->at("alias").location, Canonical("repo/m"));
  EXPECT_EQ(listed->at("ext").problem,
            Outside("model directory 'ext'", Canonical("outside/model")));
  EXPECT_EQ(listed->count("file_link"), 0u);
  EXPECT_EQ(Source()->ReadFile("ext", "config.pbtxt").status().code(), StatusCode::kNotFound);

  auto followed = Source(true)->ListModels();
  ASSERT_TRUE(followed.ok());
  EXPECT_TRUE(followed->at("ext").problem.empty());
  EXPECT_EQ(followed->at("ext").location, Canonical("outside/model"));
  EXPECT_EQ(Source(true)->ReadFile("ext", "config.pbtxt").value(), "name: \"model\"");
}

TEST_F(RepositorySymlinkTest, FileLinksBelowAModelFollowTheSameRule) {
  Link(P("outside/weights.bin"), "repo/m/1/weights.bin");
  const std::string why =
      Outside("symbolic link '1/weights.bin'", Canonical("outside/weights.bin"));
  EXPECT_EQ(Source()->Fingerprint("m").status().message(), why);
  EXPECT_TRUE(Source(true)->Fingerprint("m").ok());
  fs::remove(root_ / "repo/m/1/weights.bin");
  Link("../../shared/7/model.txt", "repo/m/1/weights.bin");  // inside: fine
  EXPECT_TRUE(Source()->Fingerprint("m").ok());

  Link(P("outside/model/config.pbtxt"), "repo/m/labels.txt");
  auto read = Source()->ReadFile("m", "labels.txt");
  EXPECT_EQ(read.status().message(),
            Outside("symbolic link 'labels.txt'", Canonical("outside/model/config.pbtxt")));
  EXPECT_EQ(Source(true)->ReadFile("m", "labels.txt").value(), "name: \"model\"");
}

TEST_F(RepositorySymlinkTest, DanglingLinksAreNamed) {
  Link("9_missing", "repo/m/9");
  auto versions = Source(true)->ListVersions("m");
  EXPECT_EQ(versions.status().message(),
            "version directory '9' is a symbolic link to '9_missing', which does not exist");
  Link(P("nowhere"), "repo/gone");
  EXPECT_EQ(
      Source(true)->ListModels().value().at("gone").problem,
      "model directory 'gone' is a symbolic link to '" + P("nowhere") + "', which does not exist");
}

TEST_F(RepositorySymlinkTest, LoopsDoNotHang) {
  Link("8", "repo/m/8");  // a link to itself
  auto versions = Source(true)->ListVersions("m");
  ASSERT_FALSE(versions.ok());
  EXPECT_NE(versions.status().message().find("version directory '8' is a symbolic link to '8' "
                                             "that cannot be resolved"),
            std::string::npos)
      << versions.status().message();
  fs::remove(root_ / "repo/m/8");
  Link("b", "repo/loop_a");
  Link("loop_a", "repo/b");
  auto listed = Source(true)->ListModels();
  ASSERT_TRUE(listed.ok());
  EXPECT_NE(listed->at("loop_a").problem.find("cannot be resolved"), std::string::npos);
  // A directory link back up the tree: each directory is walked once.
  Link("..", "repo/m/1/up");
  auto fp = Source()->Fingerprint("m");
  ASSERT_TRUE(fp.ok()) << fp.status().message();
  EXPECT_NE(fp->find("1/up/ (already seen)"), std::string::npos) << *fp;
}

TEST_F(RepositorySymlinkTest, RetargetedLinkChangesTheFingerprint) {
  Link("../shared/7", "repo/m/2");
  auto source = Source();
  const std::string before = source->Fingerprint("m").value();
  EXPECT_EQ(source->Fingerprint("m").value(), before);
  fs::remove(root_ / "repo/m/2");
  Link(P("repo2/other/3"), "repo/m/2");
  EXPECT_NE(source->Fingerprint("m").value(), before);
}

TEST_F(RepositorySymlinkTest, RepositoryPathCheck) {
  EXPECT_TRUE(CheckRepositoryPath(P("repo")).ok());
  Status missing = CheckRepositoryPath(P("nope"));
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "model repository '" + P("nope") + "' does not exist");
  EXPECT_EQ(CheckRepositoryPath(P("outside/weights.bin")).message(),
            "model repository '" + P("outside/weights.bin") + "' is not a directory");
  EXPECT_EQ(CheckRepositoryPath(P("outside/weights.bin/x")).message(),
            "cannot access model repository '" + P("outside/weights.bin/x") + "': Not a directory");
  EXPECT_EQ(CheckRepositoryPath("").message(), "model repository path is empty");
  EXPECT_EQ(LocalRepositorySource(P("nope")).ListModels().status().message(), missing.message());
  // Unreadable: only a process without CAP_DAC_OVERRIDE sees mode 000 refused
  // (tests/e2e/test_repository_path.py drops the capability instead).
  fs::permissions(root_ / "repo2", fs::perms::none);
  Status unreadable = CheckRepositoryPath(P("repo2"));
  fs::permissions(root_ / "repo2", fs::perms::owner_all);
  if (geteuid() != 0) {
    EXPECT_EQ(unreadable.message(),
              "cannot read model repository '" + P("repo2") + "': Permission denied");
  }
}

}  // namespace
}  // namespace inferd
