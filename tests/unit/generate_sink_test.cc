// The generate extension's sinks: exactly one response for /generate, SSE
// events for /generate_stream (through the buffering stream of a responder
// that cannot stream).
#include "frontend/http/generate_sink.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace inferd::http {
namespace {

class FakeResponder : public HttpResponder {
 public:
  void Send(HttpResponse response) override { sent.push_back(std::move(response)); }
  std::vector<HttpResponse> sent;
};

// A responder that streams: records the head and the parts.
class StreamingResponder : public HttpResponder {
 public:
  struct Log {
    HttpResponse head;
    std::vector<std::string> parts;
    bool ended = false;
  };
  class Stream : public HttpStream {
   public:
    explicit Stream(Log& log) : log_(log) {}
    void Write(std::string part) override { log_.parts.push_back(std::move(part)); }
    void End() override { log_.ended = true; }
    bool Closed() const override { return false; }

   private:
    Log& log_;
  };
  void Send(HttpResponse response) override { sent.push_back(std::move(response)); }
  std::unique_ptr<HttpStream> OpenStream(HttpResponse head) override {
    log.head = std::move(head);
    return std::make_unique<Stream>(log);
  }
  std::vector<HttpResponse> sent;
  Log log;
};

std::unique_ptr<InferResponse> Response(int32_t value) {
  auto r = std::make_unique<InferResponse>();
  r->model_name = "m";
  r->model_version = 1;
  auto& o = r->AddOutput("OUT", DataType::kInt32, {1}, 4);
  std::memcpy(o.buffer.data(), &value, 4);
  return r;
}

TEST(GenerateSinkTest, OneResponse) {
  auto responder = std::make_shared<FakeResponder>();
  GenerateSink sink(responder);
  sink.Send(Response(5), true);
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 200);
  EXPECT_EQ(responder->sent[0].body, R"({"OUT":5,"model_name":"m","model_version":"1"})");
}

TEST(GenerateSinkTest, OneResponseThenAFlagsOnlyFinalCountsAsOne) {
  auto responder = std::make_shared<FakeResponder>();
  GenerateSink sink(responder);
  sink.Send(Response(5), false);
  sink.Finish(Status::Ok());
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 200);
}

TEST(GenerateSinkTest, ZeroOrManyResponsesAreRefused) {
  for (int n : {0, 2}) {
    auto responder = std::make_shared<FakeResponder>();
    GenerateSink sink(responder);
    for (int i = 0; i < n; ++i) sink.Send(Response(i), false);
    sink.Finish(Status::Ok());
    ASSERT_EQ(responder->sent.size(), 1u);
    EXPECT_EQ(responder->sent[0].status, 400);
    EXPECT_NE(responder->sent[0].body.find("generate expects model to produce exactly 1 response"),
              std::string::npos);
  }
}

TEST(GenerateSinkTest, ErrorKeepsItsStatus) {
  auto responder = std::make_shared<FakeResponder>();
  GenerateSink sink(responder);
  sink.Finish(Unavailable("busy"));
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 503);
  EXPECT_EQ(responder->sent[0].body, R"({"error":"busy"})");
}

TEST(GenerateStreamSinkTest, EventsThenEnd) {
  auto responder = std::make_shared<StreamingResponder>();
  GenerateStreamSink sink(responder);
  sink.handler_returned()->store(true);
  sink.Send(Response(1), false);
  sink.Send(Response(2), false);
  EXPECT_FALSE(responder->log.ended);
  sink.Finish(Internal("boom"));
  EXPECT_EQ(responder->log.head.status, 200);
  EXPECT_EQ(responder->log.head.content_type, "text/event-stream; charset=utf-8");
  ASSERT_EQ(responder->log.parts.size(), 3u);
  EXPECT_EQ(responder->log.parts[0],
            "data: {\"OUT\":1,\"model_name\":\"m\",\"model_version\":\"1\"}\n\n");
  EXPECT_EQ(responder->log.parts[2], "data: {\"error\":\"boom\"}\n\n");
  EXPECT_TRUE(responder->log.ended);
  EXPECT_TRUE(responder->sent.empty());
}

TEST(GenerateStreamSinkTest, NoResponsesIsAnEmpty200Stream) {
  auto responder = std::make_shared<StreamingResponder>();
  GenerateStreamSink sink(responder);
  sink.handler_returned()->store(true);
  sink.Finish(Status::Ok());
  EXPECT_EQ(responder->log.head.status, 200);
  EXPECT_TRUE(responder->log.parts.empty());
  EXPECT_TRUE(responder->log.ended);
}

TEST(GenerateStreamSinkTest, AFirstErrorChoosesTheStatus) {
  auto responder = std::make_shared<StreamingResponder>();
  GenerateStreamSink sink(responder);
  sink.handler_returned()->store(true);
  sink.Finish(Unavailable("gone"));
  EXPECT_EQ(responder->log.head.status, 503);
  ASSERT_EQ(responder->log.parts.size(), 1u);
  EXPECT_EQ(responder->log.parts[0], "data: {\"error\":\"gone\"}\n\n");
}

TEST(GenerateStreamSinkTest, ARefusalInsideInferIsAPlainJsonError) {
  auto responder = std::make_shared<StreamingResponder>();
  GenerateStreamSink sink(responder);
  sink.Finish(InvalidArgument("bad"));  // still on the handler's thread, inside Infer
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 400);
  EXPECT_EQ(responder->sent[0].content_type, "application/json");
  EXPECT_TRUE(responder->log.parts.empty());
}

TEST(GenerateStreamSinkTest, AnErrorFromAnotherThreadIsAnEvent) {
  auto responder = std::make_shared<StreamingResponder>();
  GenerateStreamSink sink(responder);
  std::thread([&] { sink.Finish(InvalidArgument("bad")); }).join();
  EXPECT_TRUE(responder->sent.empty());
  EXPECT_EQ(responder->log.head.status, 400);
  ASSERT_EQ(responder->log.parts.size(), 1u);
}

TEST(GenerateStreamSinkTest, BufferedWhenTheResponderCannotStream) {
  auto responder = std::make_shared<FakeResponder>();
  {
    GenerateStreamSink sink(responder);
    sink.handler_returned()->store(true);
    sink.Send(Response(1), false);
    sink.Send(Response(2), true);
  }
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].content_type, "text/event-stream; charset=utf-8");
  EXPECT_EQ(responder->sent[0].body,
            "data: {\"OUT\":1,\"model_name\":\"m\",\"model_version\":\"1\"}\n\n"
            "data: {\"OUT\":2,\"model_name\":\"m\",\"model_version\":\"1\"}\n\n");
}

}  // namespace
}  // namespace inferd::http
