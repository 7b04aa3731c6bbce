// Unit tests of infer-batcher's ModelInfoCache (src/batcher/model_info.h)
// with a fake ModelConfig fetch answered by the test.
#include <gtest/gtest.h>

#include <thread>

#include "batcher/model_info.h"

namespace inferd::batcher {
namespace {

using std::chrono::milliseconds;

struct FakeFetch {
  int calls = 0;
  std::vector<ModelInfoCache::FetchDone> pending;
  ModelInfoCache::Fetch fn() {
    return [this](const std::string&, const std::string&, ModelInfoCache::FetchDone done) {
      ++calls;
      pending.push_back(std::move(done));
    };
  }
  void Answer(bool ok, int max_batch_size, bool decoupled = false) {
    inference::ModelConfig config;
    config.set_max_batch_size(max_batch_size);
    config.mutable_model_transaction_policy()->set_decoupled(decoupled);
    auto waiting = std::move(pending);
    pending.clear();
    for (auto& done : waiting) done(ok, config);
  }
};

TEST(ModelInfoFromConfig, ReadsBatchSizeDecoupledAndSequence) {
  inference::ModelConfig config;
  config.set_max_batch_size(8);
  EXPECT_EQ(ModelInfoFromConfig(config).max_batch_size, 8);
  EXPECT_FALSE(ModelInfoFromConfig(config).decoupled);
  EXPECT_FALSE(ModelInfoFromConfig(config).sequence);
  config.mutable_model_transaction_policy()->set_decoupled(true);
  config.mutable_sequence_batching();
  EXPECT_TRUE(ModelInfoFromConfig(config).decoupled);
  EXPECT_TRUE(ModelInfoFromConfig(config).sequence);
}

TEST(ModelInfoCache, ConcurrentLookupsShareOneFetchAndTheAnswerIsCached) {
  FakeFetch fetch;
  ModelInfoCache cache(fetch.fn(), milliseconds(60000));
  std::vector<std::optional<ModelInfo>> got;
  for (int i = 0; i < 3; ++i)
    cache.Get("m", "", [&](std::optional<ModelInfo> info) { got.push_back(info); });
  EXPECT_EQ(fetch.calls, 1);
  EXPECT_TRUE(got.empty());
  fetch.Answer(true, 4);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& info : got) {
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->max_batch_size, 4);
  }
  cache.Get("m", "", [&](std::optional<ModelInfo> info) { got.push_back(info); });
  EXPECT_EQ(fetch.calls, 1);  // cached: answered at once
  ASSERT_EQ(got.size(), 4u);
  cache.Get("m", "2", [&](std::optional<ModelInfo> info) { got.push_back(info); });
  EXPECT_EQ(fetch.calls, 2);  // another version is another entry
}

TEST(ModelInfoCache, UnknownModelsAreNulloptAndAskedAgainAfterTheNegativeTtl) {
  FakeFetch fetch;
  ModelInfoCache cache(fetch.fn(), milliseconds(60000), milliseconds(20));
  std::optional<ModelInfo> got = ModelInfo{};
  cache.Get("nope", "", [&](std::optional<ModelInfo> info) { got = info; });
  fetch.Answer(false, 0);
  EXPECT_FALSE(got.has_value());
  cache.Get("nope", "", [&](std::optional<ModelInfo> info) { got = info; });
  EXPECT_EQ(fetch.calls, 1);  // still negative-cached
  std::this_thread::sleep_for(milliseconds(30));
  cache.Get("nope", "", [&](std::optional<ModelInfo> info) { got = info; });
  EXPECT_EQ(fetch.calls, 2);
  fetch.Answer(true, 2);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->max_batch_size, 2);
}

TEST(ModelInfoCache, InvalidateAndTtlMakeTheNextLookupFetch) {
  FakeFetch fetch;
  ModelInfoCache cache(fetch.fn(), milliseconds(20));
  auto ignore = [](std::optional<ModelInfo>) {};
  cache.Get("m", "", ignore);
  fetch.Answer(true, 8);
  cache.Invalidate("m", "");
  cache.Get("m", "", ignore);
  EXPECT_EQ(fetch.calls, 2);
  fetch.Answer(true, 8, true);
  std::optional<ModelInfo> got;
  cache.Get("m", "", [&](std::optional<ModelInfo> info) { got = info; });
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->decoupled);
  std::this_thread::sleep_for(milliseconds(30));
  cache.Get("m", "", ignore);
  EXPECT_EQ(fetch.calls, 3);  // past the TTL
}

}  // namespace
}  // namespace inferd::batcher
