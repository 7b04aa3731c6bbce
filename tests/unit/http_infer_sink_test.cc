// HttpInferSink: the one HTTP answer to an infer request, whatever the
// producer sends.
#include "frontend/http/http_infer_sink.h"

#include <gtest/gtest.h>

#include <cstring>

namespace inferd::http {
namespace {

class FakeResponder : public HttpResponder {
 public:
  void Send(HttpResponse response) override { sent.push_back(std::move(response)); }
  std::vector<HttpResponse> sent;
};

std::unique_ptr<InferResponse> Response(int32_t value) {
  auto r = std::make_unique<InferResponse>();
  r->model_name = "simple";
  r->model_version = 1;
  r->id = "req-1";
  auto& o = r->AddOutput("OUTPUT0", DataType::kInt32, {1}, 4);
  std::memcpy(o.buffer.data(), &value, 4);
  return r;
}

const std::string* FindHeader(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

TEST(HttpInferSinkTest, AFinalResponseIsEncodedAsJson) {
  auto responder = std::make_shared<FakeResponder>();
  HttpInferSink sink(responder, OutputEncoding(), Encoding::kIdentity);
  sink.Send(Response(42), /*final=*/true);
  ASSERT_EQ(responder->sent.size(), 1u);
  const HttpResponse& r = responder->sent[0];
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_NE(r.body.find("\"model_name\":\"simple\""), std::string::npos);
  EXPECT_NE(r.body.find("\"id\":\"req-1\""), std::string::npos);
  EXPECT_NE(r.body.find("[42]"), std::string::npos);
  EXPECT_EQ(FindHeader(r, "Content-Encoding"), nullptr);
}

TEST(HttpInferSinkTest, TheResponseIsCompressedWhenTheClientAcceptsIt) {
  auto responder = std::make_shared<FakeResponder>();
  HttpInferSink sink(responder, OutputEncoding(), Encoding::kGzip);
  sink.Send(Response(7), /*final=*/true);
  ASSERT_EQ(responder->sent.size(), 1u);
  const HttpResponse& r = responder->sent[0];
  ASSERT_NE(FindHeader(r, "Content-Encoding"), nullptr);
  EXPECT_EQ(*FindHeader(r, "Content-Encoding"), "gzip");
  auto body = Inflate(r.body, 1 << 20);
  ASSERT_TRUE(body.ok());
  EXPECT_NE(body->find("[7]"), std::string::npos);
}

TEST(HttpInferSinkTest, BinaryOutputsGetTheHeaderLength) {
  auto responder = std::make_shared<FakeResponder>();
  OutputEncoding enc;
  enc.binary_default = true;
  HttpInferSink sink(responder, std::move(enc), Encoding::kIdentity);
  sink.Send(Response(1), /*final=*/true);
  ASSERT_EQ(responder->sent.size(), 1u);
  const HttpResponse& r = responder->sent[0];
  EXPECT_EQ(r.content_type, "application/octet-stream");
  ASSERT_NE(FindHeader(r, "Inference-Header-Content-Length"), nullptr);
  const size_t header = std::stoul(*FindHeader(r, "Inference-Header-Content-Length"));
  EXPECT_EQ(r.body.size(), header + 4);  // the JSON header, then the 4 tensor bytes
}

TEST(HttpInferSinkTest, AnErrorGetsItsStatusCode) {
  auto responder = std::make_shared<FakeResponder>();
  HttpInferSink sink(responder, OutputEncoding(), Encoding::kGzip);
  sink.Finish(Unavailable("Exceeds maximum queue size"));
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 503);
  EXPECT_EQ(responder->sent[0].body, "{\"error\":\"Exceeds maximum queue size\"}");
}

TEST(HttpInferSinkTest, ANonFinalResponseIsA500NamingTheProblemAndNothingFollows) {
  auto responder = std::make_shared<FakeResponder>();
  HttpInferSink sink(responder, OutputEncoding(), Encoding::kIdentity);
  sink.Send(Response(1), /*final=*/false);
  sink.Send(Response(2), /*final=*/true);
  sink.Finish(Status::Ok());
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 500);
  EXPECT_NE(responder->sent[0].body.find("non-final"), std::string::npos);
  EXPECT_NE(responder->sent[0].body.find("'simple'"), std::string::npos);
}

TEST(HttpInferSinkTest, AFinalSignalWithoutAResponseIsA500) {
  auto responder = std::make_shared<FakeResponder>();
  HttpInferSink sink(responder, OutputEncoding(), Encoding::kIdentity);
  sink.Finish(Status::Ok());
  sink.Finish(Internal("late"));
  ASSERT_EQ(responder->sent.size(), 1u);
  EXPECT_EQ(responder->sent[0].status, 500);
  EXPECT_NE(responder->sent[0].body.find("without a response"), std::string::npos);
}

}  // namespace
}  // namespace inferd::http
