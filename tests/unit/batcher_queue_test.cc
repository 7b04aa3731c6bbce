// Unit tests of infer-batcher's BatchQueue (src/batcher/batch_queue.h) with
// a fake upstream that records each call and answers when the test says.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "batcher/batch_queue.h"

namespace inferd::batcher {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using std::chrono::milliseconds;

struct Call {
  ModelInferRequest request;
  middleman::CallOptions options;
  Answer done;
};

// Records upstream calls; Next waits for the next one.
class FakeUpstream {
 public:
  Upstream fn() {
    return [this](ModelInferRequest r, const middleman::CallOptions& o, Answer done) {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back({std::move(r), o, std::move(done)});
      cv_.notify_all();
    };
  }
  // The next call, or a failed test after 5 s.
  Call Next() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(5), [&] { return !calls_.empty(); })) {
      ADD_FAILURE() << "no upstream call";
      return {};
    }
    Call c = std::move(calls_.front());
    calls_.pop_front();
    return c;
  }
  size_t pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call> calls_;
};

// What one caller got.
struct Outcome {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  ::grpc::Status status;
  ModelInferResponse response;

  Answer answer() {
    return [this](const ::grpc::Status& s, ModelInferResponse& r) {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      status = s;
      response = r;
      cv.notify_all();
    };
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return done; });
  }
};

std::shared_ptr<const ModelInferRequest> Request(int64_t rows, const std::string& id) {
  auto r = std::make_shared<ModelInferRequest>();
  r->set_model_name("m");
  r->set_id(id);
  auto* in = r->add_inputs();
  in->set_name("IN");
  in->set_datatype("INT32");
  in->add_shape(rows);
  in->add_shape(1);
  std::string data(static_cast<size_t>(rows) * 4, '\0');
  for (int64_t i = 0; i < rows; ++i) data[static_cast<size_t>(i) * 4] = static_cast<char>(id[0]);
  r->add_raw_input_contents(data);
  return r;
}

// The upstream's answer to a request: OUT = IN.
ModelInferResponse Echo(const ModelInferRequest& r) {
  ModelInferResponse a;
  a.set_model_name(r.model_name());
  a.set_model_version("1");
  a.set_id(r.id());
  auto* out = a.add_outputs();
  out->set_name("OUT");
  out->set_datatype("INT32");
  *out->mutable_shape() = r.inputs(0).shape();
  a.add_raw_output_contents(r.raw_input_contents(0));
  return a;
}

QueuedRequest Queued(std::shared_ptr<const ModelInferRequest> r, Outcome& o) {
  QueuedRequest q;
  q.rows = r->inputs(0).shape(0);
  q.request = std::move(r);
  q.done = o.answer();
  return q;
}

class BatchQueueTest : public ::testing::Test {
 protected:
  middleman::MetricsRegistry metrics;
  FakeUpstream upstream;
  // 0: batches wait for their rows or their delay (the idle rule has its
  // own tests below).
  BatchQueue queue{upstream.fn(), &metrics, 0};
};

TEST_F(BatchQueueTest, AFullBatchGoesAtOnceAsOneMergedCall) {
  Outcome o[4];
  const char* ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    queue.Add("k", 4, std::chrono::seconds(60), Queued(Request(1, ids[i]), o[i]));
  }
  Call c = upstream.Next();
  EXPECT_EQ(c.request.inputs(0).shape(0), 4);
  EXPECT_EQ(c.request.id().rfind("batcher-", 0), 0u);
  EXPECT_EQ(queue.queued(), 0);
  ModelInferResponse answer = Echo(c.request);
  c.done(::grpc::Status::OK, answer);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(o[i].Wait());
    EXPECT_TRUE(o[i].status.ok());
    EXPECT_EQ(o[i].response.SerializeAsString(), Echo(*Request(1, ids[i])).SerializeAsString());
  }
  EXPECT_NE(metrics.RenderText().find("batcher_batch_rows_bucket{le=\"4\"} 1"), std::string::npos)
      << metrics.RenderText();
}

TEST_F(BatchQueueTest, TheTimerSendsAPartialBatchAfterTheDelay) {
  Outcome a, b;
  const auto start = std::chrono::steady_clock::now();
  queue.Add("k", 8, std::chrono::microseconds(30000), Queued(Request(1, "a"), a));
  queue.Add("k", 8, std::chrono::microseconds(30000), Queued(Request(2, "b"), b));
  EXPECT_EQ(queue.queued(), 2);
  Call c = upstream.Next();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(25));
  EXPECT_EQ(c.request.inputs(0).shape(0), 3);
  ModelInferResponse answer = Echo(c.request);
  c.done(::grpc::Status::OK, answer);
  ASSERT_TRUE(b.Wait());
  EXPECT_EQ(b.response.outputs(0).shape(0), 2);
  EXPECT_EQ(b.response.id(), "b");
}

TEST_F(BatchQueueTest, ARequestLargerThanTheRoomLeftStartsTheNextBatch) {
  Outcome a, b;
  queue.Add("k", 4, std::chrono::seconds(60), Queued(Request(3, "a"), a));
  EXPECT_EQ(upstream.pending(), 0u);
  queue.Add("k", 4, std::chrono::seconds(60), Queued(Request(2, "b"), b));
  Call c = upstream.Next();  // "a" alone, unchanged
  EXPECT_EQ(c.request.SerializeAsString(), Request(3, "a")->SerializeAsString());
  EXPECT_EQ(queue.queued(), 1);
  queue.Stop();  // sends "b"
  Call d = upstream.Next();
  EXPECT_EQ(d.request.id(), "b");
}

TEST_F(BatchQueueTest, KeysBatchSeparately) {
  Outcome a, b;
  queue.Add("k1", 2, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  queue.Add("k2", 2, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  EXPECT_EQ(upstream.pending(), 0u);
  EXPECT_EQ(queue.queued(), 2);
}

TEST_F(BatchQueueTest, CancelledAndExpiredRequestsAreAnsweredAndLeftOut) {
  Outcome a, b, c;
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  QueuedRequest qa = Queued(Request(1, "a"), a);
  qa.cancelled = cancelled;
  QueuedRequest qb = Queued(Request(1, "b"), b);
  qb.deadline = std::chrono::system_clock::now() + milliseconds(1);
  queue.Add("k", 3, std::chrono::seconds(60), std::move(qa));
  queue.Add("k", 3, std::chrono::seconds(60), std::move(qb));
  cancelled->store(true);
  std::this_thread::sleep_for(milliseconds(5));
  queue.Add("k", 3, std::chrono::seconds(60), Queued(Request(1, "c"), c));
  ASSERT_TRUE(a.Wait());
  EXPECT_EQ(a.status.error_code(), ::grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(b.Wait());
  EXPECT_EQ(b.status.error_code(), ::grpc::StatusCode::DEADLINE_EXCEEDED);
  Call call = upstream.Next();  // "c" alone, unchanged
  EXPECT_EQ(call.request.id(), "c");
  ModelInferResponse answer = Echo(call.request);
  call.done(::grpc::Status::OK, answer);
  ASSERT_TRUE(c.Wait());
  EXPECT_TRUE(c.status.ok());
}

TEST_F(BatchQueueTest, AMergedCallCarriesTheLatestDeadlineAndNoCancellation) {
  Outcome a, b;
  const auto soon = std::chrono::system_clock::now() + std::chrono::seconds(10);
  QueuedRequest qa = Queued(Request(1, "a"), a);
  qa.deadline = soon + std::chrono::seconds(5);
  qa.cancelled = std::make_shared<std::atomic<bool>>(false);
  QueuedRequest qb = Queued(Request(1, "b"), b);
  qb.deadline = soon;
  queue.Add("k", 2, std::chrono::seconds(60), std::move(qa));
  queue.Add("k", 2, std::chrono::seconds(60), std::move(qb));
  Call c = upstream.Next();
  EXPECT_EQ(c.options.deadline, soon + std::chrono::seconds(5));
  EXPECT_EQ(c.options.cancelled, nullptr);
  // A request without a deadline: the upstream's default timeout.
  Outcome d, e;
  QueuedRequest qd = Queued(Request(1, "d"), d);
  qd.deadline = soon;
  queue.Add("k", 2, std::chrono::seconds(60), std::move(qd));
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "e"), e));
  EXPECT_EQ(upstream.Next().options.deadline, std::chrono::system_clock::time_point{});
}

TEST_F(BatchQueueTest, AnUpstreamErrorFailsEveryRequestOfTheBatchWithItsStatus) {
  Outcome a, b;
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  Call c = upstream.Next();
  ModelInferResponse none;
  c.done(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "inferd went away"), none);
  for (Outcome* o : {&a, &b}) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->status.error_code(), ::grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(o->status.error_message(), "inferd went away");
  }
}

TEST_F(BatchQueueTest, InvalidArgumentOnAMergedBatchResendsEachRequestAlone) {
  Outcome a, b;
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  Call merged = upstream.Next();
  ModelInferResponse none;
  merged.done(::grpc::Status(::grpc::StatusCode::INVALID_ARGUMENT, "bad batch"), none);
  Call first = upstream.Next(), second = upstream.Next();
  EXPECT_EQ(first.request.SerializeAsString(), Request(1, "a")->SerializeAsString());
  EXPECT_EQ(second.request.id(), "b");
  first.done(::grpc::Status(::grpc::StatusCode::INVALID_ARGUMENT, "a is bad"), none);
  ModelInferResponse answer = Echo(second.request);
  second.done(::grpc::Status::OK, answer);
  ASSERT_TRUE(a.Wait());
  EXPECT_EQ(a.status.error_message(), "a is bad");
  ASSERT_TRUE(b.Wait());
  EXPECT_TRUE(b.status.ok());
  EXPECT_EQ(b.response.id(), "b");
}

TEST_F(BatchQueueTest, AnAnswerThatDoesNotSplitIsInternalForEveryone) {
  Outcome a, b;
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  Call c = upstream.Next();
  ModelInferResponse answer = Echo(c.request);
  answer.mutable_outputs(0)->set_shape(0, 1);
  c.done(::grpc::Status::OK, answer);
  for (Outcome* o : {&a, &b}) {
    ASSERT_TRUE(o->Wait());
    EXPECT_EQ(o->status.error_code(), ::grpc::StatusCode::INTERNAL);
    EXPECT_NE(o->status.error_message().find("OUT"), std::string::npos);
  }
}

TEST_F(BatchQueueTest, SendPassesARequestThroughUnchangedWithItsCancellation) {
  Outcome a;
  QueuedRequest q = Queued(Request(2, "a"), a);
  auto flag = std::make_shared<std::atomic<bool>>(false);
  q.cancelled = flag;
  queue.Send(std::move(q));
  Call c = upstream.Next();
  EXPECT_EQ(c.request.SerializeAsString(), Request(2, "a")->SerializeAsString());
  EXPECT_EQ(c.options.cancelled, flag);
}

TEST_F(BatchQueueTest, StopSendsWhatWaitsAndLaterRequestsGoAtOnce) {
  Outcome a, b;
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  queue.Stop();
  EXPECT_EQ(upstream.Next().request.id(), "a");
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  EXPECT_EQ(upstream.Next().request.id(), "b");
}

class IdleBatchQueueTest : public ::testing::Test {
 protected:
  middleman::MetricsRegistry metrics;
  FakeUpstream upstream;
  BatchQueue queue{upstream.fn(), &metrics, 1};
};

TEST_F(IdleBatchQueueTest, ARequestThatFindsItsKeyIdleGoesAtOnceUnchanged) {
  Outcome a;
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  Call c = upstream.Next();  // no 60 s wait
  EXPECT_EQ(c.request.SerializeAsString(), Request(1, "a")->SerializeAsString());
  EXPECT_EQ(queue.queued(), 0);
  ModelInferResponse answer = Echo(c.request);
  c.done(::grpc::Status::OK, answer);
  ASSERT_TRUE(a.Wait());
  EXPECT_EQ(a.response.id(), "a");
}

TEST_F(IdleBatchQueueTest, RequestsWaitWhileTheKeyIsBusyAndGoWhenItsCallEnds) {
  Outcome a, b, c, d;
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  Call first = upstream.Next();
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(2, "c"), c));
  // Another key is idle: its request goes at once.
  queue.Add("other", 8, std::chrono::seconds(60), Queued(Request(1, "d"), d));
  EXPECT_EQ(upstream.Next().request.id(), "d");
  EXPECT_EQ(upstream.pending(), 0u);
  EXPECT_EQ(queue.queued(), 2);
  ModelInferResponse answer = Echo(first.request);
  first.done(::grpc::Status::OK, answer);
  Call merged = upstream.Next();  // sent when the first call ended
  EXPECT_EQ(merged.request.inputs(0).shape(0), 3);
  EXPECT_EQ(queue.queued(), 0);
  answer = Echo(merged.request);
  merged.done(::grpc::Status::OK, answer);
  ASSERT_TRUE(c.Wait());
  EXPECT_EQ(c.response.id(), "c");
  EXPECT_EQ(c.response.outputs(0).shape(0), 2);
  // Idle again: the next request goes at once.
  Outcome e;
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "e"), e));
  EXPECT_EQ(upstream.Next().request.id(), "e");
}

TEST_F(IdleBatchQueueTest, AFullBatchOrTheDelayStillSendsWhileTheKeyIsBusy) {
  Outcome a, b, c, d;
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  Call first = upstream.Next();
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  queue.Add("k", 2, std::chrono::seconds(60), Queued(Request(1, "c"), c));
  EXPECT_EQ(upstream.Next().request.inputs(0).shape(0), 2);  // full
  const auto start = std::chrono::steady_clock::now();
  queue.Add("k", 2, std::chrono::microseconds(20000), Queued(Request(1, "d"), d));
  EXPECT_EQ(upstream.Next().request.id(), "d");  // the delay, with two calls busy
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(15));
}

TEST_F(IdleBatchQueueTest, AnUpstreamErrorFreesTheKey) {
  Outcome a, b;
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "a"), a));
  Call first = upstream.Next();
  queue.Add("k", 8, std::chrono::seconds(60), Queued(Request(1, "b"), b));
  ModelInferResponse none;
  first.done(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "gone"), none);
  ASSERT_TRUE(a.Wait());
  EXPECT_EQ(a.status.error_code(), ::grpc::StatusCode::UNAVAILABLE);
  Call second = upstream.Next();
  EXPECT_EQ(second.request.id(), "b");
}

}  // namespace
}  // namespace inferd::batcher
