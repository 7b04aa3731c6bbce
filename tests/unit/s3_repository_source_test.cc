// S3RepositorySource against an in-memory ObjectStore with fault injection:
// the listing rules, versions, fingerprints, the listing snapshot (one
// listing per pass, no GETs for unchanged models), reading one file, and
// the cache (reuse across reloads and restarts, only changed objects
// downloaded, nothing partial ever visible, faults).
#include "repository/s3_repository_source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "fake_object_store.h"

namespace inferd {
namespace {
namespace fs = std::filesystem;
using FakeStore = testing::FakeObjectStore;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class S3RepositorySourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = fs::temp_directory_path() /
             ("inferd_s3_cache_" +
              std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(cache_);
    store_ = std::make_shared<FakeStore>();
    metrics_ = std::make_shared<RepositoryFetchMetrics>();
    store_->Put("repo/a/config.pbtxt", "name: \"a\"");
    store_->Put("repo/a/labels with space+plus ünï.txt", "cat\ndog\n");
    store_->Put("repo/a/1/model.bin", "one");
    store_->Put("repo/a/2/model.bin", "two");
    store_->Put("repo/a/2/sub/extra.bin", "extra");
  }
  void TearDown() override { fs::remove_all(cache_); }

  std::unique_ptr<S3RepositorySource> Source(
      std::chrono::milliseconds ttl = std::chrono::milliseconds(60000)) {
    S3RepositoryOptions o;
    o.cache_directory = cache_.string();
    o.listing_ttl = ttl;
    o.metrics = metrics_;
    return std::make_unique<S3RepositorySource>(store_, "repo", o);
  }
  RepositoryFetchCounts Counts(const S3RepositorySource& source) {
    return metrics_->Snapshot()[source.name()];
  }
  // The generation directories of a model's cache.
  std::vector<std::string> Generations(const S3RepositorySource& source, const std::string& m) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(source.cache_root() + "/" + m, ec)) {
      if (e.is_directory()) out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path cache_;
  std::shared_ptr<FakeStore> store_;
  std::shared_ptr<RepositoryFetchMetrics> metrics_;
};

TEST_F(S3RepositorySourceTest, ListsModelsByTheLocalRules) {
  store_->Put("repo/b/", "");                       // a directory marker: an (empty) model
  store_->Put("repo/.hidden/config.pbtxt", "x");    // hidden
  store_->Put("repo/top-level.txt", "x");           // a plain file: not a model
  store_->Put("repo//empty-component", "x");        // no name
  store_->Put("repo/bad..name/config.pbtxt", "x");  // invalid name
  store_->Put("other/c/config.pbtxt", "x");         // another prefix
  store_->Put("repository/d/config.pbtxt", "x");    // a longer prefix is not this one
  auto source = Source();
  auto listed = source->ListModels();
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ(listed->at("a").problem, "");
  EXPECT_EQ(listed->at("a").location, "s3://http://fake:9000/bucket/repo/a");
  EXPECT_EQ(listed->at("b").problem, "");
  EXPECT_EQ(listed->at("bad..name").problem, "invalid model name");
  EXPECT_EQ(source->ListVersions("bad..name").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source->ListVersions(".hidden").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source->ListVersions("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source->ListVersions("b").value(), std::set<int64_t>{});
}

TEST_F(S3RepositorySourceTest, VersionsAreDecimalDirectories) {
  store_->Put("repo/a/01/x", "leading zero");
  store_->Put("repo/a/x1/x", "not a number");
  store_->Put("repo/a/3", "a file, not a directory");
  store_->Put("repo/a/4/", "");  // a directory marker
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  EXPECT_EQ(source->ListVersions("a").value(), (std::set<int64_t>{1, 2, 4}));
}

TEST_F(S3RepositorySourceTest, WholeBucketPrefix) {
  store_->Put("m/config.pbtxt", "x");
  S3RepositoryOptions o;
  o.cache_directory = cache_.string();
  S3RepositorySource source(store_, "", o);
  auto listed = source.ListModels();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->count("m"), 1u);
  EXPECT_EQ(listed->count("repo"), 1u);
  EXPECT_EQ(source.ReadFile("m", "config.pbtxt").value(), "x");
}

TEST_F(S3RepositorySourceTest, OnePaginatedListingPerPassAndNoGetsForUnchangedModels) {
  for (int i = 0; i < 1000; ++i) store_->Put("repo/m" + std::to_string(i) + "/config.pbtxt", "c");
  auto source = Source();
  std::map<std::string, std::string> fingerprints;
  for (int pass = 0; pass < 2; ++pass) {
    // What ModelManager::PollOnce does: list, then fingerprint each model.
    auto listed = source->ListModels();
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 1001u);
    for (const auto& [name, listing] : *listed) {
      auto fp = source->Fingerprint(name);
      ASSERT_TRUE(fp.ok());
      if (pass == 1) {
        EXPECT_EQ(fingerprints[name], *fp) << name;
      }
      fingerprints[name] = *fp;
    }
    EXPECT_EQ(store_->lists.load(), pass + 1) << "one listing per pass";
  }
  EXPECT_EQ(store_->gets.load() + store_->get_strings.load(), 0);
  EXPECT_EQ(Counts(*source).listings, 2u);
}

TEST_F(S3RepositorySourceTest, AStaleSnapshotListsOnlyTheModel) {
  auto source = Source(std::chrono::milliseconds(0));
  ASSERT_TRUE(source->ListModels().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(source->Fingerprint("a").ok());
  ASSERT_EQ(store_->list_prefixes.size(), 2u);
  EXPECT_EQ(store_->list_prefixes[0], "repo/");
  EXPECT_EQ(store_->list_prefixes[1], "repo/a/");
  EXPECT_EQ(source->ListVersions("missing").status().code(), StatusCode::kNotFound);
}

TEST_F(S3RepositorySourceTest, FingerprintFollowsKeysSizesAndETags) {
  auto source = Source(std::chrono::milliseconds(0));
  const std::string before = source->Fingerprint("a").value();
  EXPECT_EQ(source->Fingerprint("a").value(), before);
  store_->Put("repo/a/1/model.bin", "uno");  // same size, new content: new ETag
  const std::string changed = source->Fingerprint("a").value();
  EXPECT_NE(changed, before);
  store_->Put("repo/a/3/model.bin", "three");  // a new version
  EXPECT_NE(source->Fingerprint("a").value(), changed);
  EXPECT_EQ(source->ListVersions("a").value(), (std::set<int64_t>{1, 2, 3}));
}

TEST_F(S3RepositorySourceTest, PollStyleChangeDetection) {
  auto source = Source();
  auto first = source->ListModels().value();
  const std::string fp = source->Fingerprint("a").value();
  store_->Put("repo/new/config.pbtxt", "n");
  store_->Put("repo/a/config.pbtxt", "name: \"a\" # changed");
  auto second = source->ListModels().value();
  EXPECT_EQ(second.count("new"), 1u);
  EXPECT_NE(source->Fingerprint("a").value(), fp);
  for (const std::string key :
       {"repo/a/config.pbtxt", "repo/a/labels with space+plus ünï.txt", "repo/a/1/model.bin",
        "repo/a/2/model.bin", "repo/a/2/sub/extra.bin"}) {
    store_->Delete(key);
  }
  auto third = source->ListModels().value();
  EXPECT_EQ(third.count("a"), 0u);
  EXPECT_EQ(source->Fingerprint("a").status().code(), StatusCode::kNotFound);
}

TEST_F(S3RepositorySourceTest, ReadFile) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  EXPECT_EQ(source->ReadFile("a", "config.pbtxt").value(), "name: \"a\"");
  EXPECT_EQ(source->ReadFile("a", "labels with space+plus ünï.txt").value(), "cat\ndog\n");
  EXPECT_EQ(store_->get_strings.load(), 2);
  EXPECT_EQ(source->ReadFile("a", "missing.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->get_strings.load(), 2) << "a key the listing lacks costs no request";
  EXPECT_EQ(source->ReadFile("a", "../b/config.pbtxt").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(source->ReadFile("a", "/etc/passwd").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(source->ReadFile("nope", "config.pbtxt").status().code(), StatusCode::kNotFound);
  const auto counts = Counts(*source);
  EXPECT_EQ(counts.objects, 2u);
  EXPECT_EQ(counts.bytes, 9u + 8u);

  S3RepositoryOptions small;
  small.cache_directory = cache_.string();
  small.max_read_bytes = 4;
  S3RepositorySource bounded(store_, "repo", small);
  EXPECT_EQ(bounded.ReadFile("a", "config.pbtxt").status().code(), StatusCode::kResourceExhausted);
}

TEST_F(S3RepositorySourceTest, MaterializeFetchesTopLevelFilesAndTheRequestedVersions) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  auto dir = source->Materialize("a", {1});
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(ReadAll(fs::path(*dir) / "config.pbtxt"), "name: \"a\"");
  EXPECT_EQ(ReadAll(fs::path(*dir) / "labels with space+plus ünï.txt"), "cat\ndog\n");
  EXPECT_EQ(ReadAll(fs::path(*dir) / "1" / "model.bin"), "one");
  EXPECT_FALSE(fs::exists(fs::path(*dir) / "2")) << "version 2 was not asked for";
  EXPECT_EQ(store_->gets.load(), 3);
  EXPECT_EQ(fs::path(*dir).parent_path().parent_path().string(), source->cache_root());
  const auto counts = Counts(*source);
  EXPECT_EQ(counts.objects, 3u);
  EXPECT_EQ(counts.bytes, 9u + 8u + 3u);
  EXPECT_EQ(counts.cache_hits, 0u);
  // Nested directories of a version come too.
  auto both = source->Materialize("a", {1, 2});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(ReadAll(fs::path(*both) / "2" / "sub" / "extra.bin"), "extra");
  EXPECT_EQ(store_->gets.load(), 5) << "only version 2's files were downloaded";
}

TEST_F(S3RepositorySourceTest, WarmupAndInitialStateFilesComeWithEveryVersion) {
  store_->Put("repo/a/warmup/in.bin", "warm");
  store_->Put("repo/a/initial_state/s.bin", "state");
  store_->Put("repo/a/other/not_wanted.bin", "no");
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  auto dir = source->Materialize("a", {1});
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(ReadAll(fs::path(*dir) / "warmup" / "in.bin"), "warm");
  EXPECT_EQ(ReadAll(fs::path(*dir) / "initial_state" / "s.bin"), "state");
  EXPECT_FALSE(fs::exists(fs::path(*dir) / "other"));
}

TEST_F(S3RepositorySourceTest, UnchangedModelIsNotDownloadedAgain) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  auto first = source->Materialize("a", {1, 2});
  ASSERT_TRUE(first.ok());
  const int gets = store_->gets.load();
  auto again = source->Materialize("a", {1, 2});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first) << "same content: same directory";
  EXPECT_EQ(store_->gets.load(), gets);
  EXPECT_EQ(Counts(*source).cache_hits, 5u);
  // Fewer versions than cached: still nothing to fetch.
  EXPECT_EQ(source->Materialize("a", {2}).value(), *first);
  EXPECT_EQ(store_->gets.load(), gets);
}

TEST_F(S3RepositorySourceTest, OnlyChangedObjectsAreDownloadedAndTheOldDirectoryStays) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  auto loaded_from_first = source->Pin("a", first);  // as a loaded version holds it
  store_->Put("repo/a/1/model.bin", "ONE!");
  ASSERT_TRUE(source->ListModels().ok());
  const int gets = store_->gets.load();
  auto second = source->Materialize("a", {1});
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*second, first);
  EXPECT_EQ(store_->gets.load(), gets + 1) << "only the changed object";
  EXPECT_EQ(ReadAll(fs::path(*second) / "1" / "model.bin"), "ONE!");
  EXPECT_EQ(ReadAll(fs::path(*second) / "config.pbtxt"), "name: \"a\"");
  // The directory a loaded version may still read is intact.
  EXPECT_EQ(ReadAll(fs::path(first) / "1" / "model.bin"), "one");
  EXPECT_EQ(Counts(*source).cache_hits, 2u);
}

TEST_F(S3RepositorySourceTest, AGenerationStaysWhilePinnedAndGoesAfter) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  // A version loaded from the first generation whose reloads keep failing
  // holds its pin while newer generations come and go.
  auto pin = source->Pin("a", first);
  ASSERT_NE(pin, nullptr);
  EXPECT_EQ(source->Pin("a", first), pin) << "one token per directory";
  EXPECT_EQ(source->Pin("a", "/somewhere/else"), nullptr);
  std::string latest;
  for (int i = 2; i <= 3; ++i) {
    store_->Put("repo/a/config.pbtxt", "name: \"a\" # " + std::to_string(i));
    ASSERT_TRUE(source->ListModels().ok());
    latest = source->Materialize("a", {1}).value();
  }
  EXPECT_EQ(Generations(*source, "a"), (std::vector<std::string>{"g1", "g3"}))
      << "g2 was never pinned; g1 is";
  EXPECT_EQ(ReadAll(fs::path(first) / "1" / "model.bin"), "one");
  pin.reset();
  store_->Put("repo/a/config.pbtxt", "name: \"a\" # 4");
  ASSERT_TRUE(source->ListModels().ok());
  const std::string fourth = source->Materialize("a", {1}).value();
  EXPECT_FALSE(fs::exists(first));
  EXPECT_EQ(Generations(*source, "a"), std::vector<std::string>{"g4"});
  EXPECT_EQ(ReadAll(fs::path(fourth) / "config.pbtxt"), "name: \"a\" # 4");
}

TEST_F(S3RepositorySourceTest, AnotherProcessReadsWithoutTouchingTheCache) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  auto pin = source->Pin("a", first);
  store_->Put("repo/a/config.pbtxt", "name: \"a\" # 2");
  ASSERT_TRUE(source->ListModels().ok());
  ASSERT_TRUE(source->Materialize("a", {1}).ok());
  auto other = Source();  // the same --model-cache-dir, another process
  ASSERT_TRUE(other->ListModels().ok());
  EXPECT_EQ(other->ReadFile("a", "config.pbtxt").value(), "name: \"a\" # 2");
  EXPECT_TRUE(fs::exists(first)) << "the first process's pinned generation is left alone";
}

TEST_F(S3RepositorySourceTest, OneProcessPerRepositoryCache) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  ASSERT_TRUE(source->Materialize("a", {1}).ok());
  auto other = Source();  // another process with the same --model-cache-dir
  ASSERT_TRUE(other->ListModels().ok());
  auto refused = other->Materialize("a", {1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("in use by another inferd process"), std::string::npos)
      << refused.status().message();
  source.reset();  // the first one exits: its lock goes with it
  EXPECT_TRUE(other->Materialize("a", {1}).ok());
  struct stat st {};
  ASSERT_EQ(::stat(other->cache_root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the repository's cache is private";
}

TEST_F(S3RepositorySourceTest, ADeletedFileLeavesTheMaterializedModel) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  store_->Delete("repo/a/labels with space+plus ünï.txt");
  ASSERT_TRUE(source->ListModels().ok());
  const std::string second = source->Materialize("a", {1}).value();
  EXPECT_NE(second, first);
  EXPECT_FALSE(fs::exists(fs::path(second) / "labels with space+plus ünï.txt"));
}

TEST_F(S3RepositorySourceTest, CacheIsReusedAcrossARestart) {
  std::string dir;
  {
    auto source = Source();
    ASSERT_TRUE(source->ListModels().ok());
    dir = source->Materialize("a", {1}).value();
  }
  const int gets = store_->gets.load();
  metrics_ = std::make_shared<RepositoryFetchMetrics>();
  auto restarted = Source();  // a new process: only the disk is left
  ASSERT_TRUE(restarted->ListModels().ok());
  EXPECT_EQ(restarted->ReadFile("a", "config.pbtxt").value(), "name: \"a\"");
  EXPECT_EQ(store_->get_strings.load(), 0) << "config.pbtxt came from the cache";
  auto again = restarted->Materialize("a", {1});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, dir);
  EXPECT_EQ(store_->gets.load(), gets);
  EXPECT_EQ(Counts(*restarted).cache_hits, 4u);  // config.pbtxt read + 3 files
  EXPECT_EQ(Counts(*restarted).objects, 0u);

  // A restart after a change downloads the change only.
  restarted.reset();
  store_->Put("repo/a/config.pbtxt", "name: \"a\" # changed");
  auto third = Source();
  ASSERT_TRUE(third->ListModels().ok());
  ASSERT_TRUE(third->Materialize("a", {1}).ok());
  EXPECT_EQ(store_->gets.load(), gets + 1);
}

TEST_F(S3RepositorySourceTest, LeftoversOfACrashedProcessAreRemoved) {
  std::string dir;
  {
    auto source = Source();
    ASSERT_TRUE(source->ListModels().ok());
    dir = source->Materialize("a", {1}).value();
    fs::create_directories(source->cache_root() + "/a/g2.partial/1");
    fs::create_directories(source->cache_root() + "/a/g7");
  }
  auto restarted = Source();
  ASSERT_TRUE(restarted->ListModels().ok());
  EXPECT_EQ(restarted->Materialize("a", {1}).value(), dir);
  EXPECT_EQ(Generations(*restarted, "a"), std::vector<std::string>{"g1"});
}

TEST_F(S3RepositorySourceTest, AnObjectDeletedBetweenListAndGetFailsCleanly) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  store_->Put("repo/a/1/model.bin", "changed");
  ASSERT_TRUE(source->ListModels().ok());
  store_->Delete("repo/a/1/model.bin");  // after the listing, before the download
  auto failed = source->Materialize("a", {1});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
  EXPECT_NE(failed.status().message().find("was deleted"), std::string::npos)
      << failed.status().message();
  EXPECT_NE(failed.status().message().find("repo/a/1/model.bin"), std::string::npos);
  EXPECT_EQ(Generations(*source, "a"), std::vector<std::string>{"g1"}) << "no partial directory";
  EXPECT_EQ(ReadAll(fs::path(first) / "1" / "model.bin"), "one");
  EXPECT_EQ(Counts(*source).errors["not_found"], 1u);
}

TEST_F(S3RepositorySourceTest, ATruncatedTransferIsTriedAgain) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  store_->TruncateNext("repo/a/1/model.bin", 2);
  auto fetched = source->Materialize("a", {1});
  ASSERT_TRUE(fetched.ok()) << fetched.status().message();
  EXPECT_EQ(ReadAll(fs::path(*fetched) / "1" / "model.bin"), "one");
  EXPECT_EQ(Counts(*source).errors["truncated"], 2u);
}

TEST_F(S3RepositorySourceTest, ATruncatedTransferFailsCleanly) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  store_->TruncateNext("repo/a/1/model.bin", 3);  // every try
  auto failed = source->Materialize("a", {1});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(Generations(*source, "a"), std::vector<std::string>{});
  EXPECT_EQ(Counts(*source).errors["truncated"], 3u);
  // The next attempt succeeds and downloads everything again.
  auto retried = source->Materialize("a", {1});
  ASSERT_TRUE(retried.ok()) << retried.status().message();
  EXPECT_EQ(ReadAll(fs::path(*retried) / "1" / "model.bin"), "one");
}

TEST_F(S3RepositorySourceTest, APartialDownloadIsNeverVisible) {
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  const std::string first = source->Materialize("a", {1}).value();
  store_->Put("repo/a/1/model.bin", "new one");
  store_->Put("repo/a/config.pbtxt", "name: \"a\" # new");
  ASSERT_TRUE(source->ListModels().ok());
  std::atomic<int> checked{0};
  store_->set_before_get([&](const std::string&) {
    // While files are downloading: the old generation is whole, the new
    // one exists only under its partial name.
    EXPECT_EQ(ReadAll(fs::path(first) / "1" / "model.bin"), "one");
    EXPECT_EQ(ReadAll(fs::path(first) / "config.pbtxt"), "name: \"a\"");
    EXPECT_FALSE(fs::exists(source->cache_root() + "/a/g2"));
    EXPECT_TRUE(fs::exists(source->cache_root() + "/a/g2.partial"));
    ++checked;
  });
  auto second = source->Materialize("a", {1});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(checked.load(), 2);
  EXPECT_EQ(*second, source->cache_root() + "/a/g2");
}

TEST_F(S3RepositorySourceTest, DownloadsRunInParallelWithABound) {
  for (int i = 0; i < 12; ++i) store_->Put("repo/p/1/f" + std::to_string(i), "x");
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  store_->set_before_get([&](const std::string&) {
    const int now = ++in_flight;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --in_flight;
  });
  ASSERT_TRUE(source->Materialize("p", {1}).ok());
  EXPECT_GT(most.load(), 1);
  EXPECT_LE(most.load(), 4);
}

TEST_F(S3RepositorySourceTest, StoreFaultsNameTheRepositoryAndAreCounted) {
  auto source = Source();
  store_->set_fault(FakeStore::Fault::kUnreachable);
  auto unreachable = source->ListModels();
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(unreachable.status().message().find("s3://http://fake:9000/bucket/repo"),
            std::string::npos)
      << unreachable.status().message();
  store_->set_fault(FakeStore::Fault::kDenied);
  auto denied = source->ListModels();
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("access denied to bucket 'bucket'"), std::string::npos);
  store_->set_fault(FakeStore::Fault::kNoBucket);
  EXPECT_EQ(source->ListModels().status().code(), StatusCode::kNotFound);
  auto counts = Counts(*source);
  EXPECT_EQ(counts.errors["unreachable"], 1u);
  EXPECT_EQ(counts.errors["access_denied"], 1u);
  EXPECT_EQ(counts.errors["not_found"], 1u);
  EXPECT_EQ(counts.errors.size(), 7u) << "every kind's series exists from the start";

  // A materialised model stays where it is while the store is away.
  store_->set_fault(FakeStore::Fault::kNone);
  ASSERT_TRUE(source->ListModels().ok());
  const std::string dir = source->Materialize("a", {1}).value();
  store_->set_fault(FakeStore::Fault::kUnreachable);
  EXPECT_FALSE(source->ListModels().ok());
  EXPECT_EQ(ReadAll(fs::path(dir) / "1" / "model.bin"), "one");
}

TEST_F(S3RepositorySourceTest, KeysThatCannotBeFilePathsAreRefused) {
  store_->Put("repo/a/1/../../../escape", "x");
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  auto refused = source->Materialize("a", {1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(fs::path(source->cache_root()) / "escape"));
  EXPECT_FALSE(fs::exists(cache_ / "escape"));
  EXPECT_TRUE(source->Materialize("a", {2}).ok()) << "other versions are not concerned";
}

TEST_F(S3RepositorySourceTest, KeysWithNulAreRefused) {
  // "1/model.bin\0x" would be cut to "1/model.bin" by the system calls.
  store_->Put(std::string("repo/a/1/model.bin\0x", 20), "other");
  auto source = Source();
  ASSERT_TRUE(source->ListModels().ok());
  auto refused = source->Materialize("a", {1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(S3RepositorySourceTest, TheCacheDirectoryIsAPathToRedact) {
  auto source = Source();
  auto paths = source->PathsToRedact();
  EXPECT_NE(std::find(paths.begin(), paths.end(), cache_.string()), paths.end());
}

}  // namespace
}  // namespace inferd
