#include "trace/span_builder.h"

#include <gtest/gtest.h>

#include <map>

namespace inferd::trace {
namespace {

// Ids 1, 2, 3 ... in the last byte, so that tests can name them.
SpanIdSource CountingIds() {
  auto next = std::make_shared<uint8_t>(0);
  SpanIdSource ids;
  ids.trace_id = [] {
    TraceId t{};
    t[15] = 0xaa;
    return t;
  };
  ids.span_id = [next] {
    SpanId s{};
    s[7] = ++*next;
    return s;
  };
  return ids;
}

TraceRecord Record(uint64_t id, uint64_t parent, const std::string& model,
                   std::vector<TraceTimestamp> ts) {
  TraceRecord r;
  r.id = id;
  r.parent_id = parent;
  r.model_name = model;
  r.model_version = 1;
  r.started = true;
  r.timestamps = std::move(ts);
  return r;
}

const Span& Named(const std::vector<Span>& spans, const std::string& name, size_t nth = 0) {
  for (const auto& s : spans) {
    if (s.name == name && nth-- == 0) return s;
  }
  ADD_FAILURE() << "no span " << name;
  static Span none;
  return none;
}

std::vector<std::string> EventNames(const Span& s) {
  std::vector<std::string> out;
  for (const auto& e : s.events) out.push_back(e.name);
  return out;
}

std::map<std::string, SpanAttribute> Attributes(const Span& s) {
  std::map<std::string, SpanAttribute> out;
  for (const auto& a : s.attributes) out[a.key] = a;
  return out;
}

namespace a = activity;

TEST(SpanBuilderTest, MinimalTraceIsThreeSpans) {
  TraceGroup g;
  g.root = Record(7, 0, "simple",
                  {{a::kHttpRecvStart, 100},
                   {a::kHttpRecvEnd, 110},
                   {a::kRequestStart, 120},
                   {a::kQueueStart, 130},
                   {a::kComputeStart, 140},
                   {a::kComputeInputEnd, 150},
                   {a::kComputeOutputStart, 160},
                   {a::kComputeEnd, 170},
                   {a::kRequestEnd, 180},
                   {a::kHttpSendStart, 190},
                   {a::kHttpSendEnd, 200}});
  g.root.request_id = "r1";
  auto spans = BuildSpans(g, 1000, CountingIds());
  ASSERT_EQ(spans.size(), 3u);
  const Span& root = Named(spans, "InferRequest");
  const Span& model = Named(spans, "simple");
  const Span& compute = Named(spans, "compute");
  for (const Span* s : {&root, &model, &compute}) {
    EXPECT_EQ(s->trace_id[15], 0xaa);
    EXPECT_EQ(s->kind, SpanKind::kServer);
    EXPECT_EQ(s->flags & 0xff, 3u);  // sampled, random
  }
  EXPECT_EQ(root.parent_span_id, SpanId{});
  EXPECT_EQ(model.parent_span_id, root.span_id);
  EXPECT_EQ(compute.parent_span_id, model.span_id);
  EXPECT_EQ(root.start_unix_ns, 1100u);
  EXPECT_EQ(root.end_unix_ns, 1200u);
  EXPECT_EQ(model.start_unix_ns, 1120u);
  EXPECT_EQ(model.end_unix_ns, 1180u);
  EXPECT_EQ(compute.start_unix_ns, 1140u);
  EXPECT_EQ(compute.end_unix_ns, 1170u);
  EXPECT_EQ(EventNames(root), (std::vector<std::string>{"HTTP_RECV_START", "HTTP_RECV_END",
                                                        "HTTP_SEND_START", "HTTP_SEND_END"}));
  EXPECT_EQ(EventNames(model),
            (std::vector<std::string>{"REQUEST_START", "QUEUE_START", "REQUEST_END"}));
  EXPECT_EQ(EventNames(compute), (std::vector<std::string>{"COMPUTE_START", "COMPUTE_INPUT_END",
                                                           "COMPUTE_OUTPUT_START", "COMPUTE_END"}));
  auto attrs = Attributes(model);
  EXPECT_EQ(std::get<std::string>(attrs["triton.model_name"].value), "simple");
  EXPECT_EQ(std::get<int64_t>(attrs["triton.model_version"].value), 1);
  EXPECT_EQ(std::get<int64_t>(attrs["triton.trace_id"].value), 7);
  EXPECT_EQ(std::get<int64_t>(attrs["triton.trace_parent_id"].value), 0);
  EXPECT_EQ(std::get<std::string>(attrs["triton.request_id"].value), "r1");
  EXPECT_EQ(root.events[0].time_unix_ns, 1100u);
}

TEST(SpanBuilderTest, PropagatedContextAndEnsembleNesting) {
  TraceGroup g;
  g.propagated = TraceContext{};
  g.propagated->trace_id[0] = 0x4b;
  g.propagated->span_id[0] = 0x0f;
  g.propagated->flags = 1;
  g.propagated->trace_state = "vendor=x";
  g.root = Record(1, 0, "pipeline",
                  {{a::kGrpcWaitReadStart, 10}, {a::kRequestStart, 20}, {a::kRequestEnd, 90}});
  // A step (completed first) and the step's own step (a nested ensemble).
  g.children.push_back(Record(2, 1, "inner", {{a::kRequestStart, 30}, {a::kRequestEnd, 80}}));
  g.children.push_back(Record(3, 2, "simple",
                              {{a::kRequestStart, 40},
                               {a::kComputeStart, 50},
                               {a::kComputeEnd, 60},
                               {a::kRequestEnd, 70}}));
  TraceRecord unstarted = Record(4, 1, "never", {});
  unstarted.started = false;
  g.children.push_back(unstarted);
  auto spans = BuildSpans(g, 0, CountingIds());
  ASSERT_EQ(spans.size(), 5u);  // InferRequest, pipeline, inner, simple, compute
  const Span& root = Named(spans, "InferRequest");
  EXPECT_EQ(root.trace_id[0], 0x4b);
  EXPECT_EQ(root.parent_span_id[0], 0x0f);  // the caller's span
  EXPECT_EQ(root.flags, 0x301u);            // sampled, parent remote
  for (const auto& s : spans) {
    EXPECT_EQ(s.trace_state, "vendor=x");
    EXPECT_EQ(s.trace_id, root.trace_id);
  }
  const Span& pipeline = Named(spans, "pipeline");
  const Span& inner = Named(spans, "inner");
  const Span& simple = Named(spans, "simple");
  EXPECT_EQ(pipeline.parent_span_id, root.span_id);
  EXPECT_EQ(inner.parent_span_id, pipeline.span_id);
  EXPECT_EQ(simple.parent_span_id, inner.span_id);
  EXPECT_EQ(Named(spans, "compute").parent_span_id, simple.span_id);
  EXPECT_EQ(pipeline.flags, 0x101u);
  EXPECT_EQ(std::get<int64_t>(Attributes(simple)["triton.trace_parent_id"].value), 2);
  EXPECT_EQ(Attributes(simple).count("triton.request_id"), 0u);
}

class RecordingExporter : public SpanExporter {
 public:
  void Export(std::vector<Span> spans) override {
    for (auto& s : spans) exported.push_back(std::move(s));
  }
  uint64_t dropped() const override { return 3; }
  void Flush() override { ++flushes; }
  std::vector<Span> exported;
  int flushes = 0;
};

TEST(SpanBuilderTest, CollectorExportsAndCounts) {
  auto exporter = std::make_shared<RecordingExporter>();
  SpanCollector::ExporterHooks hooks;
  hooks.exported = [] { return uint64_t{5}; };
  SpanCollector c(exporter, hooks, CountingIds());
  TraceGroup g;
  g.root = Record(1, 0, "m", {{a::kRequestStart, 1}, {a::kRequestEnd, 2}});
  c.Collect(g);
  EXPECT_EQ(exporter->exported.size(), 2u);
  // Wall clock: the offset moved steady ns 1 to about now.
  EXPECT_GT(exporter->exported[0].start_unix_ns, uint64_t{1'600'000'000} * 1'000'000'000);
  auto s = c.stats();
  EXPECT_EQ(s.traces, 1u);
  EXPECT_EQ(s.spans_exported, 5u);
  EXPECT_EQ(s.spans_dropped, 3u);
  c.Close();  // no close hook: the exporter's Flush
  EXPECT_EQ(exporter->flushes, 1);
}

}  // namespace
}  // namespace inferd::trace
