// ResponseOrder, the reorder buffer behind preserve_ordering, on its own:
// final signals leave in arrival order whatever order they come in.
#include "scheduler/response_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <thread>

#include "sink_test_util.h"

namespace inferd {
namespace {

using testing::MakeResponse;
using testing::RecordingSink;
using testing::SinkEvent;
using testing::SinkLog;

class ResponseOrderTest : public ::testing::Test {
 protected:
  std::unique_ptr<InferResponseSink> Wrap(const std::string& name) {
    return order_->Wrap(std::make_unique<RecordingSink>(name, &log_));
  }
  std::shared_ptr<ResponseOrder> order_ = std::make_shared<ResponseOrder>();
  SinkLog log_;
};

TEST_F(ResponseOrderTest, FinalSignalsLeaveInArrivalOrder) {
  auto a = Wrap("a");
  auto b = Wrap("b");
  auto c = Wrap("c");
  c->Send(MakeResponse("c"), /*final=*/true);
  b->Send(MakeResponse("b"), /*final=*/true);
  EXPECT_EQ(log_.size(), 0u);  // both wait for a
  EXPECT_EQ(order_->held(), 3u);
  a->Send(MakeResponse("a"), /*final=*/true);
  EXPECT_EQ(log_.who(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(order_->held(), 0u);
}

TEST_F(ResponseOrderTest, ErrorsKeepTheirPlace) {
  auto a = Wrap("a");
  auto b = Wrap("b");
  auto c = Wrap("c");
  b->Finish(Cancelled("cancelled while queued"));
  c->Send(MakeResponse("c"), /*final=*/true);
  EXPECT_EQ(log_.size(), 0u);
  a->Finish(Unavailable("Request timeout expired"));
  auto events = log_.events();
  ASSERT_EQ(log_.who(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(events[0].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(events[1].status.code(), StatusCode::kCancelled);
  EXPECT_EQ(events[2].kind, SinkEvent::kSend);
}

TEST_F(ResponseOrderTest, HeadPassesThroughAndLaterRequestsArriveWhenItsTurnComes) {
  auto a = Wrap("a");
  a->Send(MakeResponse("a"), /*final=*/true);
  EXPECT_EQ(log_.who(), (std::vector<std::string>{"a"}));
  auto b = Wrap("b");  // wrapped after a left: it is the head at once
  b->Finish(Internal("x"));
  EXPECT_EQ(log_.size(), 2u);
}

TEST_F(ResponseOrderTest, NonFinalResponsesOfTheHeadPassAndLaterOnesWait) {
  auto a = Wrap("a");
  auto b = Wrap("b");
  b->Send(MakeResponse("b1"), /*final=*/false);
  a->Send(MakeResponse("a1"), /*final=*/false);
  EXPECT_EQ(log_.who(), (std::vector<std::string>{"a"}));  // a's passes, b's waits
  b->Send(MakeResponse("b2"), /*final=*/false);
  a->Finish(Status::Ok());  // a ends without a last response: b's catch up
  b->Send(MakeResponse("b3"), /*final=*/true);
  auto events = log_.events();
  std::vector<std::string> ids;
  for (const auto& e : events) ids.push_back(e.kind == SinkEvent::kSend ? e.response_id : "end");
  EXPECT_EQ(ids, (std::vector<std::string>{"a1", "end", "b1", "b2", "b3"}));
  EXPECT_FALSE(events[2].final);
  EXPECT_TRUE(events[4].final);
}

TEST_F(ResponseOrderTest, CallsAfterTheFinalSignalAreIgnored) {
  auto a = Wrap("a");
  a->Send(MakeResponse("a"), /*final=*/true);
  a->Finish(Internal("late"));
  a->Send(MakeResponse("again"), /*final=*/true);
  EXPECT_EQ(log_.size(), 1u);
}

TEST_F(ResponseOrderTest, ADroppedSinkFinishesInternalInItsPlaceAndReleasesTheRest) {
  auto a = Wrap("a");
  auto b = Wrap("b");
  b->Send(MakeResponse("b"), /*final=*/true);
  a.reset();  // the producer lost it: a bug, but b must not wait forever
  auto events = log_.events();
  ASSERT_EQ(log_.who(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(events[0].status.code(), StatusCode::kInternal);
}

// A sink that, when delivered, enqueues a new request on the same buffer and
// finishes it at once (an ensemble's next step on the same model, rejected).
class ReentrantSink : public InferResponseSink {
 public:
  ReentrantSink(std::shared_ptr<ResponseOrder> order, SinkLog* log)
      : order_(std::move(order)), log_(log) {}
  void Send(std::unique_ptr<InferResponse> r, bool final) override {
    log_->Add("outer", SinkEvent{SinkEvent::kSend, final, r->id, {}});
    auto next = order_->Wrap(std::make_unique<RecordingSink>("next", log_));
    next->Finish(Unavailable("rejected"));
  }
  void Finish(Status) override {}

 private:
  std::shared_ptr<ResponseOrder> order_;
  SinkLog* log_;
};

TEST_F(ResponseOrderTest, ASinkMayEnqueueOnTheSameBufferWithoutDeadlock) {
  auto outer = order_->Wrap(std::make_unique<ReentrantSink>(order_, &log_));
  auto later = Wrap("later");  // between outer and the request outer starts
  later->Send(MakeResponse("later"), /*final=*/true);
  outer->Send(MakeResponse("outer"), /*final=*/true);
  EXPECT_EQ(log_.who(), (std::vector<std::string>{"outer", "later", "next"}));
  EXPECT_EQ(order_->held(), 0u);
}

TEST_F(ResponseOrderTest, ManyThreadsFinishingInAnyOrderDeliverInOrderOnce) {
  constexpr int kRequests = 400;
  std::vector<std::unique_ptr<InferResponseSink>> sinks;
  for (int i = 0; i < kRequests; ++i) sinks.push_back(Wrap(std::to_string(i)));
  std::vector<int> order(kRequests);
  for (int i = 0; i < kRequests; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = t; k < kRequests; k += 4) {
        const int i = order[k];
        sinks[i]->Send(MakeResponse(std::to_string(i)), /*final=*/true);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto who = log_.who();
  ASSERT_EQ(who.size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(who[i], std::to_string(i));
}

}  // namespace
}  // namespace inferd
