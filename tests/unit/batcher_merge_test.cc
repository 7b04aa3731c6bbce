// Unit tests of infer-batcher's pure part (src/batcher/merge.h): merge keys,
// every pass-through reason, merge and split round trips (BYTES included)
// and the errors of a split.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "batcher/merge.h"

namespace inferd::batcher {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;

const ModelInfo kBatching{8, false, false};

std::string Int32s(std::vector<int32_t> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

std::string BytesElements(const std::vector<std::string>& elements) {
  std::string s;
  for (const std::string& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    for (int b = 0; b < 4; ++b) s.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
    s += e;
  }
  return s;
}

// `simple`: INPUT0 and INPUT1, INT32 [rows, 4].
ModelInferRequest Simple(int64_t rows, int32_t base, const std::string& id = "") {
  ModelInferRequest r;
  r.set_model_name("simple");
  r.set_id(id);
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* in = r.add_inputs();
    in->set_name(name);
    in->set_datatype("INT32");
    in->add_shape(rows);
    in->add_shape(4);
    std::vector<int32_t> v;
    for (int64_t i = 0; i < rows * 4; ++i) v.push_back(base + static_cast<int32_t>(i));
    r.add_raw_input_contents(Int32s(v));
  }
  return r;
}

std::string Key(const ModelInferRequest& r, const ModelInfo& m = kBatching,
                int64_t* rows = nullptr) {
  int64_t n = 0;
  auto k = MergeKey(r, m, rows ? rows : &n);
  EXPECT_TRUE(std::holds_alternative<std::string>(k)) << PassThroughLabel(std::get<PassThrough>(k));
  return std::holds_alternative<std::string>(k) ? std::get<std::string>(k) : "";
}

PassThrough Reason(const ModelInferRequest& r, const ModelInfo& m = kBatching) {
  int64_t n = 0;
  auto k = MergeKey(r, m, &n);
  EXPECT_TRUE(std::holds_alternative<PassThrough>(k));
  return std::holds_alternative<PassThrough>(k) ? std::get<PassThrough>(k)
                                                : PassThrough::kNotBatchable;
}

TEST(MergeKey, SameLayoutSameKeyWhateverTheRowsAndIds) {
  int64_t rows = 0;
  const std::string a = Key(Simple(1, 0, "a"), kBatching, &rows);
  EXPECT_EQ(rows, 1);
  EXPECT_EQ(Key(Simple(3, 7, "b"), kBatching, &rows), a);
  EXPECT_EQ(rows, 3);
  ModelInferRequest reordered = Simple(1, 0);
  reordered.mutable_inputs()->SwapElements(0, 1);
  reordered.mutable_raw_input_contents()->SwapElements(0, 1);
  EXPECT_EQ(Key(reordered), a);
}

TEST(MergeKey, DiffersByModelVersionShapeDatatypeOutputsAndParameters) {
  const std::string base = Key(Simple(1, 0));
  ModelInferRequest r = Simple(1, 0);
  r.set_model_version("2");
  EXPECT_NE(Key(r), base);
  r = Simple(1, 0);
  r.set_model_name("other");
  EXPECT_NE(Key(r), base);
  r = Simple(1, 0);
  for (auto& in : *r.mutable_inputs()) in.set_shape(1, 2);
  for (auto& raw : *r.mutable_raw_input_contents()) raw.resize(8);
  EXPECT_NE(Key(r), base);
  r = Simple(1, 0);
  for (auto& in : *r.mutable_inputs()) in.set_datatype("FP32");
  EXPECT_NE(Key(r), base);
  r = Simple(1, 0);
  r.add_outputs()->set_name("OUTPUT0");
  const std::string with_output = Key(r);
  EXPECT_NE(with_output, base);
  (*r.mutable_outputs(0)->mutable_parameters())["classification"].set_int64_param(2);
  EXPECT_NE(Key(r), with_output);
  r = Simple(1, 0);
  (*r.mutable_parameters())["priority"].set_uint64_param(1);
  const std::string p1 = Key(r);
  EXPECT_NE(p1, base);
  (*r.mutable_parameters())["priority"].set_uint64_param(2);
  EXPECT_NE(Key(r), p1);
}

TEST(MergeKey, EveryPassThroughReason) {
  EXPECT_EQ(Reason(Simple(1, 0), ModelInfo{0, false, false}), PassThrough::kNotBatchable);
  EXPECT_EQ(Reason(Simple(1, 0), ModelInfo{8, true, false}), PassThrough::kDecoupled);
  EXPECT_EQ(Reason(Simple(1, 0), ModelInfo{8, false, true}), PassThrough::kSequence);
  for (const char* p : {"sequence_id", "sequence_start", "sequence_end"}) {
    ModelInferRequest r = Simple(1, 0);
    (*r.mutable_parameters())[p].set_int64_param(1);
    EXPECT_EQ(Reason(r), PassThrough::kSequence) << p;
  }
  ModelInferRequest r = Simple(1, 0);
  (*r.mutable_inputs(0)->mutable_parameters())["shared_memory_region"].set_string_param("x");
  EXPECT_EQ(Reason(r), PassThrough::kSharedMemory);
  r = Simple(1, 0);
  (*r.add_outputs()->mutable_parameters())["shared_memory_region"].set_string_param("x");
  EXPECT_EQ(Reason(r), PassThrough::kSharedMemory);
  r = Simple(1, 0);
  r.mutable_inputs(1)->mutable_contents()->add_int_contents(1);
  EXPECT_EQ(Reason(r), PassThrough::kTypedContents);
  r = Simple(1, 0);
  (*r.mutable_parameters())["something_new"].set_bool_param(true);
  EXPECT_EQ(Reason(r), PassThrough::kParameters);
  r = Simple(1, 0);
  (*r.mutable_inputs(0)->mutable_parameters())["binary_data_size"].set_int64_param(16);
  EXPECT_EQ(Reason(r), PassThrough::kParameters);
  EXPECT_EQ(Reason(Simple(9, 0)), PassThrough::kTooLarge);
}

TEST(MergeKey, BadLayoutsPassThroughForInferdToAnswer) {
  ModelInferRequest r = Simple(1, 0);
  r.mutable_raw_input_contents(0)->resize(12);  // short of [1,4] INT32
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_raw_input_contents()->RemoveLast();  // an input without data
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_inputs(0)->set_shape(0, 0);
  r.mutable_raw_input_contents(0)->clear();
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_inputs(0)->clear_shape();
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(2, 0);
  r.mutable_inputs(1)->set_shape(0, 1);  // rows differ between inputs
  r.mutable_raw_input_contents(1)->resize(16);
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_inputs(0)->set_datatype("INT33");
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_inputs(1)->set_name("INPUT0");  // a name twice
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.clear_inputs();
  r.clear_raw_input_contents();
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
  r = Simple(1, 0);
  r.mutable_inputs(0)->set_shape(1, -1);
  EXPECT_EQ(Reason(r), PassThrough::kLayout);
}

// An answer of `simple` for a merged request: OUTPUT0 = INPUT0 + INPUT1.
ModelInferResponse SimpleAnswer(const ModelInferRequest& merged) {
  ModelInferResponse a;
  a.set_model_name("simple");
  a.set_model_version("1");
  a.set_id(merged.id());
  (*a.mutable_parameters())["note"].set_string_param("kept");
  auto* out = a.add_outputs();
  out->set_name("OUTPUT0");
  out->set_datatype("INT32");
  *out->mutable_shape() = merged.inputs(0).shape();
  const std::string& x = merged.raw_input_contents(0);
  const std::string& y = merged.raw_input_contents(1);
  std::vector<int32_t> xs(x.size() / 4), ys(y.size() / 4);
  std::memcpy(xs.data(), x.data(), x.size());
  std::memcpy(ys.data(), y.data(), y.size());
  for (size_t i = 0; i < xs.size(); ++i) xs[i] += ys[i];
  a.add_raw_output_contents(Int32s(xs));
  return a;
}

TEST(MergeSplit, RoundTripGivesEachCallerItsRowsAndId) {
  const ModelInferRequest a = Simple(1, 0, "a"), b = Simple(2, 100, "b"), c = Simple(1, 50, "");
  ModelInferRequest b_reordered = b;  // inputs in another order merge by name
  b_reordered.mutable_inputs()->SwapElements(0, 1);
  b_reordered.mutable_raw_input_contents()->SwapElements(0, 1);
  auto merged = Merge({&a, &b_reordered, &c}, "batch-1");
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->id(), "batch-1");
  EXPECT_EQ(merged->inputs(0).name(), "INPUT0");
  EXPECT_EQ(merged->inputs(0).shape(0), 4);
  EXPECT_EQ(merged->inputs(0).shape(1), 4);
  EXPECT_EQ(merged->raw_input_contents(0),
            a.raw_input_contents(0) + b.raw_input_contents(0) + c.raw_input_contents(0));
  auto answers = Split(SimpleAnswer(*merged), {{"a", 1}, {"b", 2}, {"", 1}});
  ASSERT_TRUE(answers.ok()) << answers.status().message();
  ASSERT_EQ(answers->size(), 3u);
  // Each answer is what `simple` answers the request alone.
  const ModelInferRequest* originals[] = {&a, &b, &c};
  for (size_t i = 0; i < 3; ++i) {
    ModelInferResponse alone = SimpleAnswer(*originals[i]);
    EXPECT_EQ((*answers)[i].SerializeAsString(), alone.SerializeAsString()) << i;
  }
}

TEST(MergeSplit, BytesTensorsSplitElementByElement) {
  auto bytes_request = [](std::vector<std::string> elements, const std::string& id) {
    ModelInferRequest r;
    r.set_model_name("identity_bytes");
    r.set_id(id);
    auto* in = r.add_inputs();
    in->set_name("IN");
    in->set_datatype("BYTES");
    in->add_shape(static_cast<int64_t>(elements.size()) / 2);
    in->add_shape(2);
    r.add_raw_input_contents(BytesElements(elements));
    return r;
  };
  const ModelInferRequest a = bytes_request({"x", ""}, "a");
  const ModelInferRequest b = bytes_request({"long element", "yz", "", "q"}, "b");
  int64_t rows = 0;
  EXPECT_EQ(Key(a), Key(b, kBatching, &rows));
  EXPECT_EQ(rows, 2);
  ModelInferRequest short_bytes = a;
  short_bytes.mutable_raw_input_contents(0)->pop_back();
  EXPECT_EQ(Reason(short_bytes), PassThrough::kLayout);
  auto merged = Merge({&a, &b}, "m");
  ASSERT_TRUE(merged.ok());
  ModelInferResponse answer;
  answer.set_model_name("identity_bytes");
  answer.set_model_version("1");
  auto* out = answer.add_outputs();
  out->set_name("OUT");
  out->set_datatype("BYTES");
  *out->mutable_shape() = merged->inputs(0).shape();
  answer.add_raw_output_contents(merged->raw_input_contents(0));
  auto answers = Split(answer, {{"a", 1}, {"b", 2}});
  ASSERT_TRUE(answers.ok()) << answers.status().message();
  EXPECT_EQ((*answers)[0].raw_output_contents(0), a.raw_input_contents(0));
  EXPECT_EQ((*answers)[1].raw_output_contents(0), b.raw_input_contents(0));
  EXPECT_EQ((*answers)[1].outputs(0).shape(0), 2);
  EXPECT_EQ((*answers)[1].id(), "b");
}

TEST(Split, AnOutputWithoutTheBatchRowsFailsNamingIt) {
  const ModelInferRequest a = Simple(1, 0), b = Simple(1, 4);
  auto merged = Merge({&a, &b}, "m");
  ASSERT_TRUE(merged.ok());
  ModelInferResponse answer = SimpleAnswer(*merged);
  answer.mutable_outputs(0)->set_shape(0, 3);
  auto split = Split(answer, {{"a", 1}, {"b", 1}});
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.status().code(), StatusCode::kInternal);
  EXPECT_NE(split.status().message().find("OUTPUT0"), std::string::npos);
  answer = SimpleAnswer(*merged);
  answer.mutable_raw_output_contents(0)->resize(4);
  split = Split(answer, {{"a", 1}, {"b", 1}});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("OUTPUT0"), std::string::npos);
  answer = SimpleAnswer(*merged);
  answer.clear_raw_output_contents();
  split = Split(answer, {{"a", 1}, {"b", 1}});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("raw_output_contents"), std::string::npos);
}

TEST(Merge, RefusesRequestsWithoutTheFirstOnesInputs) {
  const ModelInferRequest a = Simple(1, 0);
  ModelInferRequest b = Simple(1, 0);
  b.mutable_inputs(1)->set_name("OTHER");
  auto merged = Merge({&a, &b}, "m");
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.status().message().find("INPUT1"), std::string::npos);
  EXPECT_FALSE(Merge({}, "m").ok());
}

TEST(PassThroughLabel, EveryReasonHasItsOwnLabel) {
  std::set<std::string_view> labels;
  for (int i = 0; i <= static_cast<int>(PassThrough::kTooLarge); ++i) {
    labels.insert(PassThroughLabel(static_cast<PassThrough>(i)));
  }
  EXPECT_EQ(labels.size(), 8u);
  EXPECT_EQ(labels.count("unknown"), 0u);
}

}  // namespace
}  // namespace inferd::batcher
