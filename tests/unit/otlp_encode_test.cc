// The OTLP request inferd sends, decoded with the OTLP classes generated
// from proto/otlp (what a collector sees), and the environment defaults
// (src/trace/otlp_encode.h, otlp_options.h).
#include "trace/otlp_encode.h"

#include <gtest/gtest.h>

#include <map>

#include "otlp_trace_service.pb.h"
#include "trace/otlp_config.h"
#include "trace/otlp_options.h"
#include "trace/trace_context.h"

namespace inferd::trace {
namespace {

namespace pb = opentelemetry::proto;

Span Sample() {
  Span s;
  s.trace_id = NewTraceId();
  s.span_id = NewSpanId();
  s.parent_span_id = NewSpanId();
  s.trace_state = "foo=1";
  s.flags = 0x301;
  s.name = "simple";
  s.kind = SpanKind::kServer;
  s.start_unix_ns = 1'700'000'000'000'000'000;
  s.end_unix_ns = s.start_unix_ns + 5000;
  s.attributes = {{"triton.model_name", std::string("simple")},
                  {"triton.model_version", int64_t{1}},
                  {"ok", true},
                  {"ratio", 0.5}};
  s.events = {{"QUEUE_START", s.start_unix_ns + 10, {{"n", int64_t{3}}}}};
  s.status = SpanStatus::kError;
  s.status_message = "boom";
  return s;
}

TEST(OtlpEncode, RequestDecodesWithTheOtlpProto) {
  OtlpEnvelope envelope{
      {{"service.name", std::string("inferd")}, {"host.name", std::string("h")}}, "inferd", "1.2"};
  Span span = Sample();
  Span root = Sample();
  root.parent_span_id = SpanId{};
  root.end_unix_ns = root.start_unix_ns - 1;  // a clock step: sent as start
  root.status = SpanStatus::kUnset;
  std::string bytes = EncodeExportRequest(envelope, {span, root});

  pb::collector::trace::v1::ExportTraceServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(bytes));
  ASSERT_EQ(request.resource_spans_size(), 1);
  const auto& rs = request.resource_spans(0);
  ASSERT_EQ(rs.resource().attributes_size(), 2);
  EXPECT_EQ(rs.resource().attributes(0).key(), "service.name");
  EXPECT_EQ(rs.resource().attributes(0).value().string_value(), "inferd");
  ASSERT_EQ(rs.scope_spans_size(), 1);
  EXPECT_EQ(rs.scope_spans(0).scope().name(), "inferd");
  EXPECT_EQ(rs.scope_spans(0).scope().version(), "1.2");
  ASSERT_EQ(rs.scope_spans(0).spans_size(), 2);

  const auto& s = rs.scope_spans(0).spans(0);
  EXPECT_EQ(s.trace_id(), std::string(span.trace_id.begin(), span.trace_id.end()));
  EXPECT_EQ(s.span_id(), std::string(span.span_id.begin(), span.span_id.end()));
  EXPECT_EQ(s.parent_span_id(),
            std::string(span.parent_span_id.begin(), span.parent_span_id.end()));
  EXPECT_EQ(s.trace_state(), "foo=1");
  EXPECT_EQ(s.flags(), 0x301u);
  EXPECT_EQ(s.name(), "simple");
  EXPECT_EQ(s.kind(), pb::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(s.start_time_unix_nano(), span.start_unix_ns);
  EXPECT_EQ(s.end_time_unix_nano(), span.end_unix_ns);
  ASSERT_EQ(s.attributes_size(), 4);
  EXPECT_EQ(s.attributes(0).value().string_value(), "simple");
  EXPECT_EQ(s.attributes(1).value().int_value(), 1);
  EXPECT_TRUE(s.attributes(2).value().bool_value());
  EXPECT_EQ(s.attributes(3).value().double_value(), 0.5);
  ASSERT_EQ(s.events_size(), 1);
  EXPECT_EQ(s.events(0).name(), "QUEUE_START");
  EXPECT_EQ(s.events(0).time_unix_nano(), span.start_unix_ns + 10);
  EXPECT_EQ(s.events(0).attributes(0).value().int_value(), 3);
  EXPECT_EQ(s.status().code(), pb::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(s.status().message(), "boom");

  const auto& r = rs.scope_spans(0).spans(1);
  EXPECT_TRUE(r.parent_span_id().empty());  // a root span: no parent bytes at all
  EXPECT_EQ(r.end_time_unix_nano(), r.start_time_unix_nano());
  EXPECT_FALSE(r.has_status());
}

TEST(OtlpEncode, ResponseWithAndWithoutPartialSuccess) {
  EXPECT_TRUE(DecodeExportResponse("").parsed);  // empty: full success
  EXPECT_EQ(DecodeExportResponse("").rejected_spans, 0);
  pb::collector::trace::v1::ExportTraceServiceResponse response;
  response.mutable_partial_success()->set_rejected_spans(7);
  response.mutable_partial_success()->set_error_message("too old");
  ExportResponse r = DecodeExportResponse(response.SerializeAsString());
  EXPECT_TRUE(r.parsed);
  EXPECT_EQ(r.rejected_spans, 7);
  EXPECT_EQ(r.error_message, "too old");
  EXPECT_FALSE(DecodeExportResponse("\xff\xff\xff").parsed);
}

GetEnv FakeEnv(std::map<std::string, std::string> vars) {
  auto env = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [env](const char* name) -> const char* {
    auto it = env->find(name);
    return it == env->end() ? nullptr : it->second.c_str();
  };
}

TEST(OtlpOptions, Defaults) {
  OtlpExporterOptions o = OtlpOptionsFromEnvironment("infer-gateway", FakeEnv({}));
  EXPECT_EQ(o.url, "http://localhost:4318/v1/traces");
  EXPECT_EQ(o.ServiceName(), "infer-gateway");
  EXPECT_EQ(o.max_queue_size, 2048u);
  EXPECT_EQ(o.schedule_delay.count(), 5000);
  EXPECT_EQ(o.max_export_batch_size, 512u);
  EXPECT_EQ(o.export_timeout.count(), 10000);
  EXPECT_TRUE(o.headers.empty());
}

TEST(OtlpOptions, EnvironmentOverrides) {
  OtlpExporterOptions o = OtlpOptionsFromEnvironment(
      "inferd", FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
                         {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=se%20cret, x-team = ml"},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                         {"OTEL_BSP_SCHEDULE_DELAY", "100"},
                         {"OTEL_BSP_MAX_QUEUE_SIZE", "64"},
                         {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16"},
                         {"OTEL_RESOURCE_ATTRIBUTES", "service.name=x,deployment.environment=prod"},
                         {"OTEL_SERVICE_NAME", "svc"}}));
  EXPECT_EQ(o.url, "http://collector:4318/v1/traces");
  EXPECT_EQ(o.headers, (std::vector<std::string>{"api-key: se cret", "x-team: ml"}));
  EXPECT_EQ(o.export_timeout.count(), 2500);
  EXPECT_EQ(o.schedule_delay.count(), 100);
  EXPECT_EQ(o.max_queue_size, 64u);
  EXPECT_EQ(o.max_export_batch_size, 16u);
  EXPECT_EQ(o.ServiceName(), "svc");  // OTEL_SERVICE_NAME wins
  ASSERT_EQ(o.resource.size(), 2u);
  EXPECT_EQ(o.resource[1].key, "deployment.environment");
}

TEST(OtlpOptions, TracesEndpointUsedAsIsAndBadNumbersIgnored) {
  OtlpExporterOptions o = OtlpOptionsFromEnvironment(
      "inferd", FakeEnv({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c/custom"},
                         {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored"},
                         {"OTEL_BSP_MAX_QUEUE_SIZE", "-3"},
                         {"OTEL_BSP_SCHEDULE_DELAY", "soon"},
                         {"OTEL_EXPORTER_OTLP_HEADERS", "bad\r\nname=1,ok=2"}}));
  EXPECT_EQ(o.url, "https://c/custom");
  EXPECT_EQ(o.max_queue_size, 2048u);
  EXPECT_EQ(o.schedule_delay.count(), 5000);
  EXPECT_EQ(o.headers, (std::vector<std::string>{"ok: 2"}));
}

TEST(OtlpOptions, KeyValueList) {
  auto kv = ParseOtelKeyValueList("a=1,,b = x%2Cy ,novalue,=v,c=");
  ASSERT_EQ(kv.size(), 3u);
  EXPECT_EQ(kv[0], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(kv[1], (std::pair<std::string, std::string>{"b", "x,y"}));
  EXPECT_EQ(kv[2], (std::pair<std::string, std::string>{"c", ""}));
}

TEST(OtlpOptions, FromTraceConfig) {
  TraceConfig cfg;  // as --trace-config leaves it without OpenTelemetry flags
  cfg.resource = {{"service.name", "inferd"}};
  OtlpExporterOptions gateway = OtlpOptionsFromTraceConfig(cfg, "infer-gateway", FakeEnv({}));
  EXPECT_EQ(gateway.ServiceName(), "infer-gateway");  // TraceConfig's default is not a choice
  EXPECT_EQ(gateway.url, kDefaultOtlpTracesUrl);

  cfg.url = "http://127.0.0.1:9/v1/traces";
  cfg.resource = {{"service.name", "edge"}, {"deployment.environment", "test"}};
  cfg.bsp_max_queue_size = 100;
  cfg.bsp_max_export_batch_size = 10;
  cfg.bsp_schedule_delay_ms = 200;
  OtlpExporterOptions o = OtlpOptionsFromTraceConfig(
      cfg, "infer-gateway", FakeEnv({{"OTEL_EXPORTER_OTLP_TIMEOUT", "1500"}}));
  EXPECT_EQ(o.url, "http://127.0.0.1:9/v1/traces");
  EXPECT_EQ(o.ServiceName(), "edge");
  EXPECT_EQ(o.resource.size(), 2u);
  EXPECT_EQ(o.max_queue_size, 100u);
  EXPECT_EQ(o.max_export_batch_size, 10u);
  EXPECT_EQ(o.schedule_delay.count(), 200);
  EXPECT_EQ(o.export_timeout.count(), 1500);

  // The environment's endpoint stands when the flags leave the url alone;
  // a service named "inferd" by the environment stays so.
  cfg = TraceConfig();
  cfg.resource = {{"service.name", "inferd"}};
  o = OtlpOptionsFromTraceConfig(
      cfg, "infer-gateway",
      FakeEnv({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_SERVICE_NAME", "inferd"}}));
  EXPECT_EQ(o.url, "http://c:4318/v1/traces");
  EXPECT_EQ(o.ServiceName(), "inferd");
}

}  // namespace
}  // namespace inferd::trace
