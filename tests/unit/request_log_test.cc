// Verbose request-path logging: the front ends' decode and response lines
// (core/request_log.h) and the scheduler's (scheduler/schedule_log.h), in
// the JSON format so that the context fields are checked too.
#include "core/request_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.h"
#include "scheduler/batch_runner.h"
#include "scheduler/clock.h"
#include "sink_test_util.h"

namespace inferd {
namespace {

using testing::RecordingSink;
using testing::SinkEvent;
using testing::SinkLog;

class RequestLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = GetLogSettings();
    file_ = std::tmpfile();
    ASSERT_NE(file_, nullptr);
    Configure(0);
  }
  void TearDown() override {
    SetLogSettings(saved_);
    if (file_ != nullptr) std::fclose(file_);
  }
  void Configure(int verbose, LogFormat format = LogFormat::kJson) {
    LogSettings s;
    s.verbose = verbose;
    s.format = format;
    s.fd = fileno(file_);
    SetLogSettings(s);
  }
  std::vector<std::string> Lines() {
    std::string out;
    char buf[4096];
    ssize_t n;
    off_t at = 0;
    while ((n = pread(fileno(file_), buf, sizeof(buf), at)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
  static bool Has(const std::string& line, const std::string& needle) {
    return line.find(needle) != std::string::npos;
  }

  // A request with a distinctive input value (0x7e5a7e5a) and a parameter
  // whose value must never show.
  static std::unique_ptr<InferRequest> MakeRequest() {
    auto r = std::make_unique<InferRequest>();
    r->model_name = "simple";
    r->model_version = 1;
    r->id = "req-\"7\"";
    InferInput in;
    in.name = "INPUT0";
    in.datatype = DataType::kInt32;
    in.shape = {1, 2};
    char* buf = r->Allocate(8);
    const int32_t values[2] = {0x7e5a7e5a, 2123456789};
    std::memcpy(buf, values, 8);
    in.data = BufferView{buf, 8, MemoryType::kCpu, 0};
    r->inputs.push_back(in);
    r->outputs.push_back(RequestedOutput{"OUTPUT0", 0});
    r->parameters["api_token"] = std::string("s3cr3t-value");
    return r;
  }

  LogSettings saved_;
  FILE* file_ = nullptr;
};

TEST_F(RequestLogTest, OffReturnsTheSinkItselfAndLogsNothing) {
  SinkLog log;
  auto sink = std::make_unique<RecordingSink>("front", &log);
  InferResponseSink* raw = sink.get();
  auto request = MakeRequest();
  auto out = LogDecodedRequest("http", "HTTP", *request, std::move(sink));
  EXPECT_EQ(out.get(), raw);
  LogRefusedRequest("http", "HTTP", "simple", InvalidArgument("bad"));
  EXPECT_TRUE(Lines().empty());
}

TEST_F(RequestLogTest, LevelOneLogsDecodeAndResponseWithTheContext) {
  Configure(1);
  SinkLog log;
  auto request = MakeRequest();
  auto sink =
      LogDecodedRequest("grpc", "gRPC", *request, std::make_unique<RecordingSink>("f", &log));
  auto response = testing::MakeResponse("req-\"7\"", "simple");
  response->model_version = 1;
  response->AddOutput("OUTPUT0", DataType::kInt32, {1, 2}, 8);
  sink->Send(std::move(response), /*final=*/true);
  sink->Finish(Internal("after the final one: ignored"));
  ASSERT_EQ(log.size(), 1u);  // forwarded once
  EXPECT_TRUE(log.events()[0].final);

  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  for (const auto& l : lines) {
    EXPECT_TRUE(
        Has(l, "\"component\":\"grpc\",\"model\":\"simple\",\"request_id\":\"req-\\\"7\\\"\""))
        << l;
    EXPECT_TRUE(Has(l, "\"verbose_level\":1")) << l;
  }
  EXPECT_TRUE(Has(lines[0],
                  "gRPC request: model 'simple' version 1, id 'req-\\\"7\\\"', inputs "
                  "INPUT0 INT32 [1,2]\""))
      << lines[0];
  EXPECT_TRUE(Has(lines[1],
                  "gRPC response: model 'simple' version 1, id 'req-\\\"7\\\"': OK, 1 "
                  "output(s), "))
      << lines[1];
  // Level 2's detail is absent.
  EXPECT_FALSE(Has(lines[0], "api_token"));
  EXPECT_FALSE(Has(lines[1], "OUTPUT0 INT32"));
}

TEST_F(RequestLogTest, LevelTwoAddsNamesButNeverValues) {
  Configure(2, LogFormat::kDefault);
  SinkLog log;
  auto request = MakeRequest();
  request->correlation_id = uint64_t{99};
  request->sequence_start = true;
  auto sink =
      LogDecodedRequest("http", "HTTP", *request, std::make_unique<RecordingSink>("f", &log));
  auto partial = testing::MakeResponse("req", "simple");
  partial->AddOutput("OUTPUT0", DataType::kInt32, {1, 2}, 8);
  sink->Send(std::move(partial), /*final=*/false);
  sink->Finish(Unavailable("model unloading"));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log.events()[1].kind, SinkEvent::kFinish);

  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 3u) << ::testing::PrintToString(lines);
  EXPECT_TRUE(Has(lines[0],
                  "inferd: verbose: HTTP request: model 'simple' version 1, "
                  "id 'req-\"7\"', inputs INPUT0 INT32 [1,2]; outputs OUTPUT0; "
                  "parameters api_token; sequence 99 start"))
      << lines[0];
  EXPECT_TRUE(Has(lines[1], "partial response, OK, 1 output(s)")) << lines[1];
  EXPECT_TRUE(Has(lines[1], "outputs OUTPUT0 INT32 [1,2]")) << lines[1];
  EXPECT_TRUE(Has(lines[2], "error UNAVAILABLE: model unloading")) << lines[2];
  for (const auto& l : lines) {
    EXPECT_FALSE(Has(l, "s3cr3t")) << l;
    EXPECT_FALSE(Has(l, "2120056410")) << l;  // 0x7e5a7e5a
    EXPECT_FALSE(Has(l, "2123456789")) << l;
  }
}

TEST_F(RequestLogTest, RefusedRequestsAreLevelOne) {
  Configure(1);
  LogRefusedRequest("http", "HTTP", "m\nx", InvalidArgument("failed to parse"));
  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "\"component\":\"http\",\"model\":\"m\\nx\"")) << lines[0];
  EXPECT_TRUE(Has(lines[0],
                  "HTTP request for model 'm\\\\nx' refused: error INVALID_ARGUMENT: "
                  "failed to parse"))
      << lines[0];
}

TEST_F(RequestLogTest, LongNamesAreCutInTheFields) {
  Configure(1);
  auto request = MakeRequest();
  request->id = std::string(10000, 'i');
  SinkLog log;
  auto sink =
      LogDecodedRequest("http", "HTTP", *request, std::make_unique<RecordingSink>("f", &log));
  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LT(lines[0].size(), 1200u);
  EXPECT_TRUE(Has(lines[0], "\"request_id\":\"" + std::string(kLogFieldBytes, 'i') + "\""));
}

// A backend instance that answers each request with its first input, or
// fails the ones whose id starts with "fail".
class EchoInstance final : public BackendInstance {
 public:
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) {
      if (item.request->id.rfind("fail", 0) == 0) {
        item.status = Internal("backend said no");
        continue;
      }
      const InferInput& in = item.request->inputs[0];
      auto& out = item.response->AddOutput("OUTPUT0", in.datatype, in.shape, in.data.byte_size);
      std::memcpy(out.buffer.data(), in.data.data, in.data.byte_size);
    }
  }
};

TEST_F(RequestLogTest, SchedulerLinesCarryQueueAndComputeTimes) {
  Configure(1);
  EchoInstance instance;
  BatchContext ctx;
  ctx.model.name = "simple";
  ctx.model.version = 3;
  ctx.clock = RealClock::Get();
  SinkLog log;
  std::vector<std::unique_ptr<PendingRequest>> batch;
  for (const char* id : {"a", "fail-b"}) {
    auto p = std::make_unique<PendingRequest>();
    p->request = MakeRequest();
    p->request->id = id;
    p->request->outputs.clear();
    p->sink = std::make_unique<RecordingSink>(id, &log);
    batch.push_back(std::move(p));
  }
  RunBatch(ctx, instance, batch, 0, /*instance_index=*/2);
  ASSERT_EQ(log.size(), 2u);

  const auto lines = Lines();
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  EXPECT_TRUE(
      Has(lines[0], "\"component\":\"scheduler\",\"model\":\"simple\",\"request_id\":\"a\""))
      << lines[0];
  EXPECT_TRUE(Has(lines[0],
                  "scheduled: model 'simple' version 3, id 'a': batch of 2 request(s), "
                  "2 rows, instance 2, "))
      << lines[0];
  EXPECT_TRUE(Has(lines[0], " us in the queue")) << lines[0];
  EXPECT_TRUE(Has(lines[1], "\"request_id\":\"fail-b\"")) << lines[1];
  EXPECT_TRUE(Has(lines[2],
                  "executed: model 'simple' version 3, id 'a': instance 2, batch rows 2, "
                  "compute "))
      << lines[2];
  EXPECT_TRUE(Has(lines[2], "): OK\"")) << lines[2];
  EXPECT_TRUE(Has(lines[3], "): error INTERNAL: backend said no\"")) << lines[3];
  for (const auto& l : lines) EXPECT_FALSE(Has(l, "2123456789")) << l;
}

}  // namespace
}  // namespace inferd
