// The response cache's key (src/cache/cache_key.h): equal exactly when the
// requests are the same computation; any changed byte, shape, datatype,
// name, version, requested output, classification count or custom
// parameter changes it; input order does not.
#include "cache/cache_key.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

namespace inferd {
namespace {

// A request with two FP32 inputs whose bytes live in the request.
std::unique_ptr<InferRequest> TwoInputs(std::vector<float> a = {1, 2, 3, 4},
                                        std::vector<float> b = {5, 6}) {
  auto r = std::make_unique<InferRequest>();
  auto add = [&r](const char* name, const std::vector<float>& v) {
    char* p = r->Allocate(v.size() * sizeof(float));
    std::memcpy(p, v.data(), v.size() * sizeof(float));
    InferInput in;
    in.name = name;
    in.datatype = DataType::kFp32;
    in.shape = {static_cast<int64_t>(v.size())};
    in.data = BufferView{p, v.size() * sizeof(float), MemoryType::kCpu, 0};
    r->inputs.push_back(in);
  };
  add("INPUT0", a);
  add("INPUT1", b);
  return r;
}

std::string Key(const InferRequest& r, const char* model = "m", int64_t version = 1) {
  auto k = BuildCacheKey(model, version, r);
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? k->Flatten() : "";
}

TEST(CacheKeyTest, EqualRequestsHaveEqualKeysAndHashes) {
  auto a = TwoInputs(), b = TwoInputs();
  auto ka = BuildCacheKey("m", 1, *a), kb = BuildCacheKey("m", 1, *b);
  ASSERT_TRUE(ka.ok() && kb.ok());
  EXPECT_EQ(ka->Flatten(), kb->Flatten());
  EXPECT_EQ(ka->hash(), kb->hash());
}

TEST(CacheKeyTest, InputOrderDoesNotMatter) {
  auto a = TwoInputs(), b = TwoInputs();
  std::swap(b->inputs[0], b->inputs[1]);
  EXPECT_EQ(Key(*a), Key(*b));
}

TEST(CacheKeyTest, EveryFieldChangesTheKey) {
  const std::string base = Key(*TwoInputs());
  std::vector<std::pair<const char*, std::function<void(InferRequest&)>>> changes = {
      {"a data byte", [](InferRequest& r) { const_cast<char*>(r.inputs[0].data.data)[3] ^= 1; }},
      {"a shape",
       [](InferRequest& r) {
         r.inputs[0].shape = {2, 2};
       }},
      {"a datatype", [](InferRequest& r) { r.inputs[0].datatype = DataType::kInt32; }},
      {"an input name", [](InferRequest& r) { r.inputs[1].name = "INPUT2"; }},
      {"a requested output",
       [](InferRequest& r) {
         r.outputs.push_back({"OUTPUT0", 0});
       }},
      {"a classification count",
       [](InferRequest& r) {
         r.outputs.push_back({"OUTPUT0", 0});
         r.outputs.push_back({"OUTPUT1", 2});
       }},
      {"a custom parameter", [](InferRequest& r) { r.parameters["temperature"] = 0.5; }},
      {"an input less", [](InferRequest& r) { r.inputs.pop_back(); }},
  };
  for (auto& [what, change] : changes) {
    auto r = TwoInputs();
    change(*r);
    EXPECT_NE(Key(*r), base) << what;
  }
  EXPECT_NE(Key(*TwoInputs(), "n"), base) << "model name";
  EXPECT_NE(Key(*TwoInputs(), "m", 2), base) << "version";
  EXPECT_NE(BuildCacheKey("m", 1, *TwoInputs(), 7)->Flatten(), base) << "load id";
}

TEST(CacheKeyTest, RequestedOutputOrderAndClassificationAreExact) {
  auto a = TwoInputs(), b = TwoInputs(), c = TwoInputs();
  a->outputs = {{"OUTPUT0", 0}, {"OUTPUT1", 0}};
  b->outputs = {{"OUTPUT1", 0}, {"OUTPUT0", 0}};
  c->outputs = {{"OUTPUT0", 1}, {"OUTPUT1", 0}};
  EXPECT_NE(Key(*a), Key(*b));
  EXPECT_NE(Key(*a), Key(*c));
}

TEST(CacheKeyTest, MovingBytesBetweenInputsChangesTheKey) {
  // Same bytes overall, split differently: length prefixes tell them apart.
  EXPECT_NE(Key(*TwoInputs({1, 2, 3, 4}, {5, 6})), Key(*TwoInputs({1, 2, 3}, {4, 5, 6})));
}

TEST(CacheKeyTest, LargeInputsAreReferencedAndCompareExactly) {
  std::vector<float> big(4096, 1.5f);
  auto a = TwoInputs(big), b = TwoInputs(big);
  auto ka = BuildCacheKey("m", 1, *a), kb = BuildCacheKey("m", 1, *b);
  ASSERT_TRUE(ka.ok() && kb.ok());
  EXPECT_EQ(ka->hash(), kb->hash());
  const std::string flat = ka->Flatten();
  EXPECT_EQ(flat.size(), ka->size());
  EXPECT_TRUE(kb->Equals(flat));
  const_cast<char*>(b->inputs[0].data.data)[4000] ^= 1;  // a byte inside the referenced data
  auto kc = BuildCacheKey("m", 1, *b);
  EXPECT_FALSE(kc->Equals(flat));
  EXPECT_NE(kc->Flatten(), flat);
  EXPECT_FALSE(kc->Equals(flat.substr(1)));
  // An owned copy is equal to the referencing key it came from.
  CacheKey owned(flat, ka->hash());
  EXPECT_TRUE(owned.Equals(flat));
  EXPECT_TRUE(ka->Equals(owned.Flatten()));
}

TEST(CacheKeyTest, ParameterTypeMatters) {
  auto a = TwoInputs(), b = TwoInputs();
  a->parameters["k"] = int64_t{1};
  b->parameters["k"] = uint64_t{1};
  EXPECT_NE(Key(*a), Key(*b));
}

TEST(CacheKeyTest, GpuInputsAreNotKeyed) {
  auto r = TwoInputs();
  r->inputs[1].data.memory_type = MemoryType::kGpu;
  auto k = BuildCacheKey("m", 1, *r);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace inferd
