// OtlpExporter's queue, batching, retry and drop rules against a fake
// transport (src/trace/otlp_exporter.h), and the libcurl transport against
// a loopback HTTP server (tests/unit/fake_s3_server.h).
#include "trace/otlp_exporter.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <sstream>

#include "fake_s3_server.h"
#include "otlp_trace_service.pb.h"
#include "trace/trace_context.h"

namespace inferd::trace {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// Answers each POST with `answer(n)` (n: 0-based POST index), recording the
// number of spans in each request body.
class FakeTransport : public OtlpTransport {
 public:
  using Answer = std::function<PostResult(int)>;
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int> batches;  // spans per POST
    std::vector<milliseconds> timeouts;
    std::vector<Clock::time_point> at;
  };

  FakeTransport(std::shared_ptr<Shared> shared, Answer answer)
      : shared_(std::move(shared)), answer_(std::move(answer)) {}

  PostResult Post(const std::string& body, milliseconds timeout) override {
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
    EXPECT_TRUE(request.ParseFromString(body));
    int n = request.resource_spans(0).scope_spans(0).spans_size();
    int index;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      index = static_cast<int>(shared_->batches.size());
      shared_->batches.push_back(n);
      shared_->timeouts.push_back(timeout);
      shared_->at.push_back(Clock::now());
    }
    shared_->cv.notify_all();
    return answer_(index);
  }

 private:
  std::shared_ptr<Shared> shared_;
  Answer answer_;
};

PostResult Status(long code) {
  PostResult r;
  r.http_status = code;
  return r;
}

std::vector<Span> Spans(int n) {
  std::vector<Span> spans(n);
  TraceId t = NewTraceId();
  for (Span& s : spans) {
    s.trace_id = t;
    s.span_id = NewSpanId();
    s.name = "s";
  }
  return spans;
}

OtlpExporterOptions Fast() {
  OtlpExporterOptions o;
  o.max_queue_size = 100;
  o.max_export_batch_size = 10;
  o.schedule_delay = milliseconds(50);
  o.export_timeout = milliseconds(2000);
  o.initial_backoff = milliseconds(10);
  o.max_backoff = milliseconds(40);
  return o;
}

bool WaitFor(const std::shared_ptr<FakeTransport::Shared>& shared, size_t posts) {
  std::unique_lock<std::mutex> lock(shared->mu);
  return shared->cv.wait_for(lock, std::chrono::seconds(5),
                             [&] { return shared->batches.size() >= posts; });
}

TEST(OtlpExporterRules, ClassifyPost) {
  EXPECT_EQ(ClassifyPost(Status(200)), ExportOutcome::kSuccess);
  EXPECT_EQ(ClassifyPost(Status(202)), ExportOutcome::kSuccess);
  for (long code : {0L, 429L, 502L, 503L, 504L}) {
    EXPECT_EQ(ClassifyPost(Status(code)), ExportOutcome::kRetry) << code;
  }
  for (long code : {400L, 401L, 404L, 413L, 500L, 501L}) {
    EXPECT_EQ(ClassifyPost(Status(code)), ExportOutcome::kFail) << code;
  }
}

TEST(OtlpExporterRules, RetryDelayBacksOffWithJitterAndHonoursRetryAfter) {
  OtlpExporterOptions o;
  o.initial_backoff = milliseconds(1000);
  o.max_backoff = milliseconds(5000);
  std::mt19937_64 random(1);
  for (int i = 0; i < 100; ++i) {
    auto d1 = RetryDelay(o, 1, std::nullopt, random);
    auto d3 = RetryDelay(o, 3, std::nullopt, random);
    auto d9 = RetryDelay(o, 9, std::nullopt, random);
    EXPECT_TRUE(d1 >= milliseconds(500) && d1 <= milliseconds(1000)) << d1.count();
    EXPECT_TRUE(d3 >= milliseconds(2000) && d3 <= milliseconds(4000)) << d3.count();
    EXPECT_TRUE(d9 >= milliseconds(2500) && d9 <= milliseconds(5000)) << d9.count();
  }
  EXPECT_EQ(RetryDelay(o, 1, milliseconds(7000), random), milliseconds(7000));
  EXPECT_EQ(RetryDelay(o, 1, milliseconds(99000), random), o.max_retry_after);
}

TEST(OtlpExporterRules, ParseRetryAfter) {
  auto now = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(ParseRetryAfter(" 3 ", now), milliseconds(3000));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:47 GMT", now), milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now), milliseconds(0));
  EXPECT_FALSE(ParseRetryAfter("soon", now).has_value());
  EXPECT_FALSE(ParseRetryAfter("3s", now).has_value());
  EXPECT_FALSE(ParseRetryAfter("", now).has_value());
}

TEST(OtlpExporter, SendsFullBatchesAtOnceAndTheRestAfterTheDelay) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporterOptions o = Fast();
  o.schedule_delay = milliseconds(300);
  OtlpExporter exporter(o,
                        std::make_unique<FakeTransport>(shared, [](int) { return Status(200); }));
  auto start = Clock::now();
  exporter.Export(Spans(25));
  ASSERT_TRUE(WaitFor(shared, 3));
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    EXPECT_EQ(shared->batches, (std::vector<int>{10, 10, 5}));
    // Two full batches right away; the remainder waited for the schedule.
    EXPECT_LT(shared->at[1] - start, milliseconds(250));
    EXPECT_GE(shared->at[2] - start, milliseconds(250));
  }
  exporter.Shutdown();
  EXPECT_EQ(exporter.exported(), 25u);
  EXPECT_EQ(exporter.dropped(), 0u);
  EXPECT_EQ(exporter.failed_exports(), 0u);
}

TEST(OtlpExporter, InvalidSpansAreDroppedAtExport) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporter exporter(Fast(),
                        std::make_unique<FakeTransport>(shared, [](int) { return Status(200); }));
  std::vector<Span> spans = Spans(3);
  spans[0].trace_id = TraceId{};
  spans[1].span_id = SpanId{};
  exporter.Export(spans);
  exporter.Flush();
  EXPECT_EQ(exporter.dropped(), 2u);
  EXPECT_EQ(exporter.exported(), 1u);
}

TEST(OtlpExporter, FullQueueDropsWithoutBlocking) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  // The collector hangs until the test opens the gate.
  OtlpExporterOptions o = Fast();
  o.export_timeout = milliseconds(5000);
  OtlpExporter exporter(o, std::make_unique<FakeTransport>(shared, [&](int) {
                          std::unique_lock<std::mutex> lock(gate_mu);
                          gate_cv.wait(lock, [&] { return open; });
                          return Status(200);
                        }));
  exporter.Export(Spans(10));  // one full batch: now in flight, hanging
  ASSERT_TRUE(WaitFor(shared, 1));
  auto start = Clock::now();
  for (int i = 0; i < 30; ++i) exporter.Export(Spans(10));  // 300 spans for 100 places
  EXPECT_LT(Clock::now() - start, milliseconds(200));       // never waited on the collector
  EXPECT_EQ(exporter.dropped(), 200u);
  EXPECT_EQ(exporter.stats().queued_spans, 100u);
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  exporter.Flush();
  EXPECT_EQ(exporter.exported(), 110u);
  EXPECT_EQ(exporter.dropped(), 200u);
}

TEST(OtlpExporter, RetriesRetryableAnswersThenSucceeds) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporter exporter(Fast(), std::make_unique<FakeTransport>(shared, [](int n) {
                          return n == 0 ? Status(503) : n == 1 ? Status(0) : Status(200);
                        }));
  exporter.Export(Spans(4));
  exporter.Flush();
  EXPECT_EQ(exporter.exported(), 4u);
  EXPECT_EQ(exporter.dropped(), 0u);
  EXPECT_EQ(exporter.stats().export_requests, 3u);
}

TEST(OtlpExporter, NonRetryableAnswersDropTheBatch) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporter exporter(Fast(),
                        std::make_unique<FakeTransport>(shared, [](int) { return Status(400); }));
  exporter.Export(Spans(4));
  exporter.Flush();
  EXPECT_EQ(exporter.stats().export_requests, 1u);
  EXPECT_EQ(exporter.failed_exports(), 1u);
  EXPECT_EQ(exporter.dropped(), 4u);
  EXPECT_EQ(exporter.exported(), 0u);
}

TEST(OtlpExporter, RetriesAreBounded) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporterOptions o = Fast();
  o.max_attempts = 3;
  OtlpExporter exporter(o,
                        std::make_unique<FakeTransport>(shared, [](int) { return Status(504); }));
  exporter.Export(Spans(4));
  exporter.Flush();
  EXPECT_EQ(exporter.stats().export_requests, 3u);
  EXPECT_EQ(exporter.failed_exports(), 1u);
  EXPECT_EQ(exporter.dropped(), 4u);
}

TEST(OtlpExporter, RetryAfterIsHonoured) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporter exporter(Fast(), std::make_unique<FakeTransport>(shared, [](int n) {
                          PostResult r = Status(n == 0 ? 429 : 200);
                          if (n == 0) r.retry_after = milliseconds(400);
                          return r;
                        }));
  exporter.Export(Spans(2));
  exporter.Flush();
  std::lock_guard<std::mutex> lock(shared->mu);
  ASSERT_EQ(shared->at.size(), 2u);
  EXPECT_GE(shared->at[1] - shared->at[0], milliseconds(390));
  EXPECT_EQ(exporter.exported(), 2u);
}

TEST(OtlpExporter, PartialSuccessCountsRejectedSpans) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporter exporter(Fast(), std::make_unique<FakeTransport>(shared, [](int) {
                          opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse r;
                          r.mutable_partial_success()->set_rejected_spans(3);
                          PostResult p = Status(200);
                          p.body = r.SerializeAsString();
                          return p;
                        }));
  exporter.Export(Spans(5));
  exporter.Flush();
  EXPECT_EQ(exporter.stats().export_requests, 1u);  // never retried
  EXPECT_EQ(exporter.exported(), 2u);
  EXPECT_EQ(exporter.dropped(), 3u);
  EXPECT_EQ(exporter.stats().rejected_spans, 3u);
}

TEST(OtlpExporter, ShutdownIsBoundedByTheTimeoutWithAHangingCollector) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporterOptions o = Fast();
  o.export_timeout = milliseconds(300);
  // A collector that never answers: the transport gives up at its timeout.
  auto exporter =
      std::make_unique<OtlpExporter>(o, std::make_unique<FakeTransport>(shared, [&shared](int n) {
                                       milliseconds t;
                                       {
                                         std::lock_guard<std::mutex> lock(shared->mu);
                                         t = shared->timeouts[static_cast<size_t>(n)];
                                       }
                                       std::this_thread::sleep_for(t);
                                       return Status(0);
                                     }));
  exporter->Export(Spans(95));
  auto start = Clock::now();
  exporter.reset();
  auto took = Clock::now() - start;
  EXPECT_LT(took, milliseconds(800)) << "shutdown waited past the export timeout";
  std::lock_guard<std::mutex> lock(shared->mu);
  for (milliseconds t : shared->timeouts) EXPECT_LE(t, milliseconds(300));
}

TEST(OtlpExporter, ShutdownSendsWhatIsQueuedAndLaterExportsDrop) {
  auto shared = std::make_shared<FakeTransport::Shared>();
  OtlpExporterOptions o = Fast();
  o.schedule_delay = milliseconds(60000);  // only shutdown sends it
  OtlpExporter exporter(o,
                        std::make_unique<FakeTransport>(shared, [](int) { return Status(200); }));
  exporter.Export(Spans(3));
  exporter.Shutdown();
  EXPECT_EQ(exporter.exported(), 3u);
  exporter.Export(Spans(2));
  EXPECT_EQ(exporter.dropped(), 2u);
  exporter.Shutdown();  // idempotent
}

// The libcurl transport against a loopback server: what it sends, the
// keep-alive connection reused, Retry-After read, no server = status 0.
TEST(OtlpCurlTransport, PostsProtobufOverOneKeepAliveConnection) {
  int calls = 0;
  s3::testing::FakeS3 server([&calls](const s3::testing::Recorded&) {
    ++calls;
    return s3::testing::Reply{calls == 1
                                  ? std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                                  : std::string("HTTP/1.1 503 X\r\nRetry-After: 7\r\n"
                                                "Content-Length: 4\r\n\r\nbusy")};
  });
  auto transport = NewCurlTransport(
      "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/traces", {"X-Key: k1"});
  PostResult first = transport->Post("abc", milliseconds(2000));
  if (first.http_status == 0 && first.error.find("libcurl") != std::string::npos) {
    GTEST_SKIP() << first.error;
  }
  EXPECT_EQ(first.http_status, 200);
  PostResult second = transport->Post("def", milliseconds(2000));
  EXPECT_EQ(second.http_status, 503);
  EXPECT_EQ(second.body, "busy");
  EXPECT_EQ(second.retry_after, milliseconds(7000));
  auto requests = server.requests();
  ASSERT_GE(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/v1/traces");
  EXPECT_EQ(requests[0].headers["content-type"], "application/x-protobuf");
  EXPECT_EQ(requests[0].headers["x-key"], "k1");
  EXPECT_EQ(server.connections(), 1);
}

TEST(OtlpCurlTransport, NoServerIsAConnectionFailure) {
  int port;
  {
    s3::testing::FakeS3 server([](const s3::testing::Recorded&) { return s3::testing::Reply{}; });
    port = server.port();
  }  // closed: nothing listens there now
  auto transport = NewCurlTransport("http://127.0.0.1:" + std::to_string(port) + "/v1/traces", {});
  PostResult r = transport->Post("abc", milliseconds(2000));
  EXPECT_EQ(r.http_status, 0);
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(ClassifyPost(r), ExportOutcome::kRetry);
}

}  // namespace
}  // namespace inferd::trace
