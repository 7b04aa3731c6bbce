// The middleman's tracing (src/middleman/tracing.h): which requests are
// traced, the SERVER span continuing the caller's W3C context, CLIENT spans
// of InferdPool calls and the traceparent/tracestate they send (against
// RecordingInferenceServer), and infer-gateway's --trace-config rules.
#include <gtest/gtest.h>

#include <future>
#include <map>

#include "gateway/trace_setup.h"
#include "middleman/inferd_pool.h"
#include "middleman/tracing.h"
#include "recording_inference_server.h"
#include "trace/otlp_exporter.h"
#include "trace/trace_context.h"

namespace inferd::middleman {
namespace {

using trace::Span;
using trace::SpanKind;

// Keeps every exported span.
class RecordingExporter : public trace::SpanExporter {
 public:
  void Export(std::vector<Span> spans) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (Span& s : spans) spans_.push_back(std::move(s));
  }
  uint64_t dropped() const override { return 0; }
  void Flush() override {}
  std::vector<Span> spans() {
    std::lock_guard<std::mutex> lock(mu_);
    return spans_;
  }

 private:
  std::mutex mu_;
  std::vector<Span> spans_;
};

constexpr const char* kParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
// The same caller, which did not record its part.
constexpr const char* kUnsampledParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

std::string Hex(const trace::TraceId& id) { return trace::ToHex(id.data(), id.size()); }
std::string Hex(const trace::SpanId& id) { return trace::ToHex(id.data(), id.size()); }

TEST(MiddlemanTracer, ContinuesTheCallersTraceWhateverTheRate) {
  auto exporter = std::make_shared<RecordingExporter>();
  Tracer tracer({.rate = 0, .count = -1}, exporter);  // rate 0: only propagated requests
  EXPECT_EQ(tracer.StartServerSpan("GET /x", {}, {}), nullptr);
  auto server = tracer.StartServerSpan("POST /v1/classify", {kParent}, {"vendor=1", "other=2"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Hex(server->trace_id()), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(server->tracestate(), "vendor=1,other=2");
  // What a call inside it sends: same trace, this span as the parent, sampled.
  EXPECT_EQ(server->traceparent(),
            "00-0af7651916cd43dd8448eb211c80319c-" + Hex(server->span_id()) + "-01");
  auto client = server->StartChild("call", SpanKind::kClient);
  client->End();
  server->SetAttribute("http.response.status_code", int64_t{200});
  server->End();
  server->End();  // once only

  auto spans = exporter->spans();
  ASSERT_EQ(spans.size(), 2u);
  const Span& c = spans[0];
  const Span& s = spans[1];
  EXPECT_EQ(s.name, "POST /v1/classify");
  EXPECT_EQ(s.kind, SpanKind::kServer);
  EXPECT_EQ(Hex(s.parent_span_id), "b7ad6b7169203331");
  EXPECT_EQ(s.trace_state, "vendor=1,other=2");
  EXPECT_EQ(s.flags, 0x301u);  // sampled; parent known to be remote
  EXPECT_LE(s.start_unix_ns, s.end_unix_ns);
  EXPECT_EQ(c.kind, SpanKind::kClient);
  EXPECT_EQ(c.trace_id, s.trace_id);
  EXPECT_EQ(c.parent_span_id, s.span_id);
  EXPECT_EQ(c.flags, 0x101u);  // local parent
  EXPECT_GE(c.start_unix_ns, s.start_unix_ns);
  EXPECT_LE(c.end_unix_ns, s.end_unix_ns);
}

TEST(MiddlemanTracer, AnUnsampledCallerIsHandedOnNotRecorded) {
  testing::RecordingInferenceServer server;
  auto exporter = std::make_shared<RecordingExporter>();
  Tracer tracer({.rate = 1, .count = -1}, exporter);  // would trace every new request
  auto server_span = tracer.StartServerSpan("POST /v1/classify", {kUnsampledParent}, {"k=v"});
  ASSERT_NE(server_span, nullptr);
  EXPECT_FALSE(server_span->recording());
  EXPECT_EQ(server_span->traceparent(), kUnsampledParent);
  server_span->SetAttribute("a", int64_t{1});
  InferdPool pool({.url = server.address(), .channels = 1}, nullptr);
  inference::ModelInferRequest infer;
  infer.set_model_name("pipeline");
  CallOptions options;
  options.trace = server_span;
  std::promise<void> done;
  pool.Call<inference::ModelInferRequest, inference::ModelInferResponse>(
      &InferdStub::async_interface::ModelInfer, std::move(infer), options,
      [&done](const ::grpc::Status&, inference::ModelInferResponse&) { done.set_value(); });
  done.get_future().wait();
  server_span->End();
  server_span.reset();
  // inferd is told the caller's context as it came, so it records nothing either.
  auto calls = server.TakeCalls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].traceparents, std::vector<std::string>{kUnsampledParent});
  EXPECT_EQ(calls[0].tracestates, std::vector<std::string>{"k=v"});
  EXPECT_TRUE(exporter->spans().empty());
}

TEST(MiddlemanTracer, NewTracesFollowRateAndCount) {
  auto exporter = std::make_shared<RecordingExporter>();
  Tracer every_third({.rate = 3, .count = -1}, exporter);
  int traced = 0;
  for (int i = 0; i < 9; ++i) traced += every_third.StartServerSpan("r", {}, {}) != nullptr;
  EXPECT_EQ(traced, 3);

  Tracer two({.rate = 1, .count = 2}, exporter);
  auto a = two.StartServerSpan("r", {}, {});
  auto b = two.StartServerSpan("r", {}, {});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(two.StartServerSpan("r", {}, {}), nullptr);
  EXPECT_NE(a->trace_id(), b->trace_id());
  // A new trace: a root span, sampled and random.
  EXPECT_EQ(a->traceparent().substr(53), "03");
  // Invalid or repeated traceparents start a new trace (and drop tracestate).
  Tracer all({.rate = 1, .count = -1}, exporter);
  auto fresh = all.StartServerSpan("r", {kParent, kParent}, {"a=1"});
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(Hex(fresh->trace_id()), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(fresh->tracestate(), "");
}

TEST(MiddlemanTracer, FromGrpcMetadataAndAbandonedSpans) {
  auto exporter = std::make_shared<RecordingExporter>();
  Tracer tracer({.rate = 0, .count = -1}, exporter);
  std::string tp = kParent, ts = "k=v";
  std::multimap<::grpc::string_ref, ::grpc::string_ref> metadata{
      {"traceparent", tp}, {"tracestate", ts}, {"other", ts}};
  {
    auto span = tracer.StartServerSpan("svc/Method", metadata);
    ASSERT_NE(span, nullptr);
    EXPECT_EQ(span->tracestate(), "k=v");
  }  // never ended
  auto spans = exporter->spans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].status, trace::SpanStatus::kError);
}

TEST(MiddlemanTracer, InferdPoolCallsCarryTheClientSpansContext) {
  testing::RecordingInferenceServer server;
  auto exporter = std::make_shared<RecordingExporter>();
  Tracer tracer({.rate = 0, .count = -1}, exporter);
  auto parent = tracer.StartServerSpan("POST /v1/classify", {kParent}, {"vendor=1"});
  ASSERT_NE(parent, nullptr);
  InferdPool pool({.url = server.address(), .channels = 1}, nullptr);
  for (bool traced : {true, false}) {
    inference::ModelInferRequest infer;
    infer.set_model_name("pipeline");
    CallOptions options;
    if (traced) options.trace = parent;
    std::promise<void> done;
    pool.Call<inference::ModelInferRequest, inference::ModelInferResponse>(
        &InferdStub::async_interface::ModelInfer, std::move(infer), options,
        [&done](const ::grpc::Status&, inference::ModelInferResponse&) { done.set_value(); });
    done.get_future().wait();
  }
  auto calls = server.TakeCalls();
  ASSERT_EQ(calls.size(), 2u);
  auto spans = exporter->spans();
  ASSERT_EQ(spans.size(), 1u);  // the client span; the server span is still open
  const Span& client = spans[0];
  EXPECT_EQ(client.name, "inference.GRPCInferenceService/ModelInfer");
  EXPECT_EQ(client.kind, SpanKind::kClient);
  EXPECT_EQ(client.parent_span_id, parent->span_id());
  ASSERT_EQ(calls[0].traceparents.size(), 1u);
  EXPECT_EQ(calls[0].traceparents[0],
            "00-0af7651916cd43dd8448eb211c80319c-" + Hex(client.span_id) + "-01");
  EXPECT_EQ(calls[0].tracestates, std::vector<std::string>{"vendor=1"});
  EXPECT_TRUE(calls[1].traceparents.empty());
  EXPECT_TRUE(calls[1].tracestates.empty());
  bool has_status = false;
  for (const auto& a : client.attributes) {
    if (a.key == "rpc.grpc.status_code") has_status = std::get<int64_t>(a.value) == 0;
  }
  EXPECT_TRUE(has_status);
  parent->End();
}

// A collector that accepts everything.
class AcceptAll : public trace::OtlpTransport {
 public:
  trace::PostResult Post(const std::string&, std::chrono::milliseconds) override {
    trace::PostResult r;
    r.http_status = 200;
    return r;
  }
};

TEST(MiddlemanTracer, ExporterCountersAreReadAtEachScrape) {
  MetricsRegistry metrics;
  trace::OtlpExporterOptions options;
  options.max_queue_size = 2;
  trace::OtlpExporter exporter(options, std::make_unique<AcceptAll>());
  ExposeExporterMetrics(metrics, "gateway", exporter);
  auto spans = [] {
    std::vector<Span> out(3);
    for (Span& s : out) {
      s.trace_id = trace::NewTraceId();
      s.span_id = trace::NewSpanId();
      s.name = "s";
    }
    return out;
  };
  exporter.Export(spans());  // two fit, one is dropped
  exporter.Flush();
  std::string text = metrics.RenderText();
  EXPECT_NE(text.find("gateway_trace_spans_exported_total 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gateway_trace_spans_dropped_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gateway_trace_export_failures_total 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gateway_trace_spans_queued 0\n"), std::string::npos) << text;
}

trace::EnvLookup NoEnv() {
  return [](const char*) -> const char* { return nullptr; };
}

TEST(GatewayTraceSettings, OpenTelemetryOnly) {
  auto off = gateway::GatewayTraceSettingsFrom({}, NoEnv());
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled);

  trace::TraceFlags flags;
  flags.config = {"mode=opentelemetry", "level=TIMESTAMPS", "rate=1", "count=5",
                  "opentelemetry,url=http://127.0.0.1:4318/v1/traces"};
  auto on = gateway::GatewayTraceSettingsFrom(flags, NoEnv());
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_TRUE(on->enabled);
  EXPECT_EQ(on->sampling.rate, 1u);
  EXPECT_EQ(on->sampling.count, 5);
  EXPECT_EQ(on->exporter.url, "http://127.0.0.1:4318/v1/traces");
  EXPECT_EQ(on->exporter.ServiceName(), "infer-gateway");

  flags.config = {"mode=opentelemetry"};  // level OFF: a warning, no tracing
  auto level_off = gateway::GatewayTraceSettingsFrom(flags, NoEnv());
  ASSERT_TRUE(level_off.ok());
  EXPECT_FALSE(level_off->enabled);
  EXPECT_FALSE(level_off->warnings.empty());

  flags.config = {"level=TIMESTAMPS"};  // Triton mode
  EXPECT_FALSE(gateway::GatewayTraceSettingsFrom(flags, NoEnv()).ok());
  flags.config = {"opentelemetry,"};
  EXPECT_FALSE(gateway::GatewayTraceSettingsFrom(flags, NoEnv()).ok());
}

}  // namespace
}  // namespace inferd::middleman
