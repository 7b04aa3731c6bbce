// Unit tests of the gateway's pure pieces and the middleman's metrics and
// query parsing.
#include <gtest/gtest.h>

#include <cstring>

#include "gateway/classify.h"
#include "middleman/metrics_registry.h"
#include "middleman/service.h"

namespace inferd::gateway {
namespace {

inference::ModelMetadataResponse Metadata(const std::string& in_type, std::vector<int64_t> shape,
                                          const std::string& out_type) {
  inference::ModelMetadataResponse m;
  m.set_name("p");
  auto* in = m.add_inputs();
  in->set_name("IMAGE");
  in->set_datatype(in_type);
  for (int64_t d : shape) in->add_shape(d);
  auto* out = m.add_outputs();
  out->set_name("SCORES");
  out->set_datatype(out_type);
  return m;
}

TEST(PipelineFromMetadata, TakesOneBytesInputAndAnFp32Output) {
  auto p = PipelineFromMetadata(Metadata("BYTES", {-1, 1}, "FP32"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->input, "IMAGE");
  EXPECT_EQ(p->output, "SCORES");
  EXPECT_EQ(p->input_shape, (std::vector<int64_t>{1, 1}));
}

TEST(PipelineFromMetadata, RefusesOtherModels) {
  EXPECT_EQ(PipelineFromMetadata(Metadata("FP32", {-1, 1}, "FP32")).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_NE(PipelineFromMetadata(Metadata("BYTES", {-1, 4}, "FP32"))
                .status()
                .message()
                .find("more than one element"),
            std::string::npos);
  EXPECT_NE(PipelineFromMetadata(Metadata("BYTES", {1}, "INT32"))
                .status()
                .message()
                .find("no FP32 output"),
            std::string::npos);
}

TEST(MakeInferRequest, InlineAndSharedMemory) {
  PipelineInfo p{"p", "IMAGE", {1, 1}, "SCORES"};
  auto r = MakeInferRequest(p, "abc");
  ASSERT_EQ(r.raw_input_contents_size(), 1);
  EXPECT_EQ(r.raw_input_contents(0), std::string("\x03\0\0\0abc", 7));
  auto s = MakeShmInferRequest(p, "region-1", 7);
  EXPECT_EQ(s.raw_input_contents_size(), 0);
  EXPECT_EQ(s.inputs(0).parameters().at("shared_memory_region").string_param(), "region-1");
  EXPECT_EQ(s.inputs(0).parameters().at("shared_memory_byte_size").int64_param(), 7);
}

inference::ModelInferResponse Scores(const std::vector<float>& v) {
  inference::ModelInferResponse r;
  r.set_model_name("p");
  auto* o = r.add_outputs();
  o->set_name("SCORES");
  o->set_datatype("FP32");
  r.add_raw_output_contents(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  return r;
}

TEST(TopClasses, BestFirstTiesByIndexLabelled) {
  PipelineInfo p{"p", "IMAGE", {1, 1}, "SCORES"};
  auto c = TopClasses(p, Scores({0.1f, 0.5f, 0.1f, 0.3f}), 3, {"a", "b"});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[0].index, 1);
  EXPECT_EQ((*c)[0].label, "b");
  EXPECT_EQ((*c)[1].index, 3);
  EXPECT_EQ((*c)[1].label, "3");  // no label: the index
  EXPECT_EQ((*c)[2].index, 0);    // tie with 2: lower index first
  EXPECT_EQ(TopClasses(p, Scores({1, 2}), 10, {})->size(), 2u);
  EXPECT_EQ(ClassesJson("p", {{"x\"", 0.5f, 1}}),
            "{\"model\":\"p\",\"classes\":[{\"label\":\"x\\\"\",\"score\":0.5,\"index\":1}]}");
}

TEST(TopClasses, MissingOutputIsInternal) {
  PipelineInfo p{"p", "IMAGE", {1, 1}, "OTHER"};
  EXPECT_EQ(TopClasses(p, Scores({1}), 1, {}).status().code(), StatusCode::kInternal);
}

TEST(Labels, ParsesFlags) {
  Labels l;
  EXPECT_FALSE(l.Add("no-equals").ok());
  EXPECT_FALSE(l.Add("p=/nonexistent/labels.txt").ok());
  EXPECT_TRUE(l.For("p").empty());
}

TEST(MiddlemanRequest, QueryIsDecoded) {
  middleman::Request r;
  r.http.query = "top_k=3&name=a%20b+c&flag";
  std::string v;
  ASSERT_TRUE(r.Query("top_k", &v));
  EXPECT_EQ(v, "3");
  ASSERT_TRUE(r.Query("name", &v));
  EXPECT_EQ(v, "a b c");
  ASSERT_TRUE(r.Query("flag", &v));
  EXPECT_EQ(v, "");
  EXPECT_FALSE(r.Query("missing", &v));
}

TEST(MetricsRegistry, RendersFamiliesInOrder) {
  middleman::MetricsRegistry m;
  m.counter("a_total", "A", {{"code", "200"}}).Add(2);
  m.gauge("b", "B").Add(-1);
  m.histogram("c_seconds", "C", {}, {0.1, 1}).Observe(0.5);
  const std::string text = m.RenderText();
  EXPECT_NE(text.find("a_total{code=\"200\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("b -1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("c_seconds_bucket{le=\"1\"} 1\n"), std::string::npos) << text;
  EXPECT_LT(text.find("a_total"), text.find("c_seconds"));
}

}  // namespace
}  // namespace inferd::gateway
