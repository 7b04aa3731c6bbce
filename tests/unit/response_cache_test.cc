// The response cache (src/cache/response_cache.h, version_cache.h): LRU
// eviction by bytes, entries larger than the capacity, copies, the flags'
// capacity, and a version's hit/miss path with its statistics.
#include "cache/response_cache.h"

#include <gtest/gtest.h>

#include <cstring>

#include "cache/version_cache.h"

namespace inferd {
namespace {

CacheKey Key(const std::string& s) { return CacheKey(s, std::hash<std::string>{}(s)); }

// A response with one output of `bytes` bytes, each `fill`.
std::unique_ptr<InferResponse> Response(size_t bytes, char fill = 'x') {
  auto r = std::make_unique<InferResponse>();
  r->model_name = "m";
  r->model_version = 1;
  r->id = "orig";
  InferOutput& o = r->AddOutput("OUT", DataType::kUint8, {static_cast<int64_t>(bytes)}, bytes);
  std::memset(o.buffer.data(), fill, bytes);
  return r;
}

TEST(ResponseCacheTest, HitReturnsADeepCopy) {
  ResponseCache cache(1 << 20);
  auto r = Response(16, 'a');
  ASSERT_TRUE(cache.Insert(Key("k"), *r));
  std::memset(r->outputs[0].buffer.data(), 'b', 16);  // the cache kept its own bytes
  auto hit = cache.Lookup(Key("k"));
  ASSERT_NE(hit, nullptr);
  ASSERT_EQ(hit->outputs.size(), 1u);
  EXPECT_EQ(hit->outputs[0].name, "OUT");
  EXPECT_EQ(hit->outputs[0].shape, Shape({16}));
  EXPECT_EQ(std::string(hit->outputs[0].buffer.data(), 16), std::string(16, 'a'));
  EXPECT_EQ(cache.Lookup(Key("other")), nullptr);
  const auto s = cache.Stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
}

TEST(ResponseCacheTest, HitSharesTheEntryBytesAndOutlivesItsEviction) {
  const uint64_t one = ResponseCache::EntrySize(Key("k1"), *Response(1000));
  ResponseCache cache(one);  // room for one entry
  ASSERT_TRUE(cache.Insert(Key("k1"), *Response(1000, 'a')));
  auto first = cache.Lookup(Key("k1"));
  auto second = cache.Lookup(Key("k1"));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->outputs[0].buffer.data(), second->outputs[0].buffer.data()) << "not copied";
  ASSERT_TRUE(cache.Insert(Key("k2"), *Response(1000, 'b')));  // evicts k1
  EXPECT_EQ(cache.Lookup(Key("k1")), nullptr);
  EXPECT_EQ(std::string(first->outputs[0].buffer.data(), 1000), std::string(1000, 'a'));
}

TEST(ResponseCacheTest, KeysWithEqualHashesStayApart) {
  ResponseCache cache(1 << 20);
  CacheKey a = Key("a");
  CacheKey b("b", a.hash());  // a collision: the full bytes decide
  ASSERT_TRUE(cache.Insert(a, *Response(4, 'a')));
  EXPECT_EQ(cache.Lookup(b), nullptr);
  ASSERT_TRUE(cache.Insert(b, *Response(4, 'b')));
  EXPECT_EQ(cache.Lookup(a)->outputs[0].buffer.data()[0], 'a');
  EXPECT_EQ(cache.Lookup(b)->outputs[0].buffer.data()[0], 'b');
}

TEST(ResponseCacheTest, EvictsLeastRecentlyUsedBySize) {
  const uint64_t one = ResponseCache::EntrySize(Key("k1"), *Response(1000));
  ResponseCache cache(3 * one);  // room for three entries of this size
  for (const char* k : {"k1", "k2", "k3"}) ASSERT_TRUE(cache.Insert(Key(k), *Response(1000)));
  EXPECT_EQ(cache.Stats().bytes, 3 * one);
  ASSERT_NE(cache.Lookup(Key("k1")), nullptr);  // k2 is now the least recent
  ASSERT_TRUE(cache.Insert(Key("k4"), *Response(1000)));
  EXPECT_EQ(cache.Lookup(Key("k2")), nullptr);
  for (const char* k : {"k1", "k3", "k4"}) EXPECT_NE(cache.Lookup(Key(k)), nullptr) << k;
  // A bigger entry evicts as many as it needs (k1, k3: least recent first).
  ASSERT_TRUE(cache.Insert(Key("k5"), *Response(2000)));
  EXPECT_EQ(cache.Lookup(Key("k1")), nullptr);
  EXPECT_EQ(cache.Lookup(Key("k3")), nullptr);
  EXPECT_NE(cache.Lookup(Key("k4")), nullptr);
  const auto s = cache.Stats();
  EXPECT_EQ(s.evictions, 3u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_LE(s.bytes, s.capacity_bytes);
}

TEST(ResponseCacheTest, EntryLargerThanTheCapacityIsNotInserted) {
  ResponseCache cache(4096);
  ASSERT_TRUE(cache.Insert(Key("small"), *Response(100)));
  EXPECT_FALSE(cache.Insert(Key("big"), *Response(8192)));
  EXPECT_EQ(cache.Lookup(Key("big")), nullptr);
  EXPECT_NE(cache.Lookup(Key("small")), nullptr) << "nothing evicted for it";
  EXPECT_EQ(cache.Stats().too_large, 1u);
}

TEST(ResponseCacheTest, ReinsertingAKeyKeepsOneEntry) {
  ResponseCache cache(1 << 20);
  ASSERT_TRUE(cache.Insert(Key("k"), *Response(10, 'a')));
  ASSERT_TRUE(cache.Insert(Key("k"), *Response(10, 'b')));
  const auto s = cache.Stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, ResponseCache::EntrySize(Key("k"), *Response(10)));
  EXPECT_EQ(cache.Lookup(Key("k"))->outputs[0].buffer.data()[0], 'b');
}

TEST(ResponseCacheCapacityTest, Flags) {
  EXPECT_EQ(*ResponseCacheCapacity({}, -1), 0u);
  EXPECT_EQ(*ResponseCacheCapacity({"local,size=1048576"}, -1), 1048576u);
  EXPECT_EQ(*ResponseCacheCapacity({}, 4096), 4096u);
  EXPECT_EQ(*ResponseCacheCapacity({}, 0), 0u);
  auto both = ResponseCacheCapacity({"local,size=10"}, 10);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(),
            "Incompatible flags --response-cache-byte-size and --cache-config both provided. "
            "Please provide one or the other.");
  for (const char* bad : {"redis,host=localhost", "local", "local,size", "local,size=abc",
                          "local,size=0", "local,bytes=10", "local,size=-1"}) {
    EXPECT_FALSE(ResponseCacheCapacity({bad}, -1).ok()) << bad;
  }
  EXPECT_NE(ResponseCacheCapacity({"redis,host=x"}, -1).status().message().find("redis"),
            std::string::npos);
}

// A request with one UINT8 input of `bytes`.
std::unique_ptr<InferRequest> Request(const std::string& bytes, const std::string& id) {
  auto r = std::make_unique<InferRequest>();
  r->id = id;
  char* p = r->Allocate(bytes.size());
  std::memcpy(p, bytes.data(), bytes.size());
  r->inputs.push_back(InferInput{"IN",
                                 DataType::kUint8,
                                 {static_cast<int64_t>(bytes.size())},
                                 BufferView{p, bytes.size(), MemoryType::kCpu, 0}});
  return r;
}

struct Answer {
  Status status;
  std::unique_ptr<InferResponse> response;
};

std::unique_ptr<InferResponseSink> Into(Answer& a) {
  return MakeSingleResponseSink([&a](Status s, std::unique_ptr<InferResponse> r) {
    a.status = std::move(s);
    a.response = std::move(r);
  });
}

TEST(VersionCacheTest, MissInsertsOnSuccessThenHitAnswersWithTheRequestId) {
  auto cache = std::make_shared<ResponseCache>(1 << 20);
  ModelStats stats;
  VersionCache vc(cache, "m", 1, &stats, RealClock::Get());

  Answer first;
  auto req = Request("abc", "r1");
  auto sink = Into(first);
  ASSERT_FALSE(vc.Serve(req, sink));
  ASSERT_NE(req, nullptr);
  sink->Send(Response(8, 'z'), /*final=*/true);  // the model's answer
  ASSERT_TRUE(first.status.ok());
  EXPECT_EQ(cache->Stats().entries, 1u);

  Answer second;
  auto req2 = Request("abc", "r2");
  auto sink2 = Into(second);
  ASSERT_TRUE(vc.Serve(req2, sink2));
  ASSERT_TRUE(second.status.ok());
  EXPECT_EQ(second.response->id, "r2");
  EXPECT_EQ(std::string(second.response->outputs[0].buffer.data(), 8), std::string(8, 'z'));

  const auto s = stats.Snapshot();
  EXPECT_EQ(s.cache_hit.count, 1u);
  EXPECT_EQ(s.cache_miss.count, 1u);
  EXPECT_EQ(s.success.count, 1u) << "the hit (the miss's success is the scheduler's)";
  EXPECT_EQ(s.queue.count, 1u);
  EXPECT_EQ(s.inference_count, 0u);
  EXPECT_EQ(s.execution_count, 0u);
}

TEST(VersionCacheTest, AReloadDoesNotAnswerFromThePreviousLoad) {
  auto cache = std::make_shared<ResponseCache>(1 << 20);
  ModelStats stats;
  VersionCache before(cache, "m", 1, &stats, RealClock::Get());
  Answer a;
  auto req = Request("abc", "r1");
  auto sink = Into(a);
  ASSERT_FALSE(before.Serve(req, sink));
  sink->Send(Response(8, 'z'), /*final=*/true);
  VersionCache reloaded(cache, "m", 1, &stats, RealClock::Get());  // same name and version
  Answer b;
  auto req2 = Request("abc", "r2");
  auto sink2 = Into(b);
  EXPECT_FALSE(reloaded.Serve(req2, sink2)) << "a miss: new files may answer differently";
  sink2->Finish(Internal("unused"));
}

TEST(VersionCacheTest, FailedResponsesAreNotCached) {
  auto cache = std::make_shared<ResponseCache>(1 << 20);
  ModelStats stats;
  VersionCache vc(cache, "m", 1, &stats, RealClock::Get());
  Answer a;
  auto req = Request("abc", "r1");
  auto sink = Into(a);
  ASSERT_FALSE(vc.Serve(req, sink));
  sink->Finish(Internal("boom"));
  EXPECT_FALSE(a.status.ok());
  EXPECT_EQ(cache->Stats().entries, 0u);
  EXPECT_EQ(stats.Snapshot().cache_miss.count, 1u);
}

TEST(VersionCacheTest, SequenceRequestsBypassTheCache) {
  auto cache = std::make_shared<ResponseCache>(1 << 20);
  ModelStats stats;
  VersionCache vc(cache, "m", 1, &stats, RealClock::Get());
  Answer a;
  auto req = Request("abc", "r1");
  req->correlation_id = uint64_t{7};
  auto sink = Into(a);
  InferResponseSink* before = sink.get();
  ASSERT_FALSE(vc.Serve(req, sink));
  EXPECT_EQ(sink.get(), before) << "not wrapped";
  EXPECT_EQ(cache->Stats().lookups, 0u);
  sink->Finish(Internal("unused"));
}

}  // namespace
}  // namespace inferd
