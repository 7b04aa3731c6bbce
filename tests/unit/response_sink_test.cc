// The sink contract: the single-response adapter every one-shot consumer
// uses (HTTP, gRPC unary, stream slots, ensemble steps) and the server's
// in-flight decorator.
#include "core/response_sink.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/inflight_tracker.h"
#include "sink_test_util.h"

namespace inferd {
namespace {

using testing::MakeResponse;
using testing::RecordingSink;
using testing::SinkEvent;
using testing::SinkLog;

// What a MakeSingleResponseSink callback received, call by call.
struct Calls {
  std::vector<Status> status;
  std::vector<std::string> response_id;  // "" for no response

  std::unique_ptr<InferResponseSink> Sink() {
    return MakeSingleResponseSink([this](Status s, std::unique_ptr<InferResponse> r) {
      status.push_back(std::move(s));
      response_id.push_back(r ? r->id : "");
    });
  }
};

TEST(SingleResponseSinkTest, FinalResponseCompletesOnceWithIt) {
  Calls calls;
  auto sink = calls.Sink();
  sink->Send(MakeResponse("r1"), /*final=*/true);
  ASSERT_EQ(calls.status.size(), 1u);
  EXPECT_TRUE(calls.status[0].ok());
  EXPECT_EQ(calls.response_id[0], "r1");
}

TEST(SingleResponseSinkTest, ErrorCompletesWithTheErrorAndNoResponse) {
  Calls calls;
  auto sink = calls.Sink();
  sink->Finish(Unavailable("queue full"));
  ASSERT_EQ(calls.status.size(), 1u);
  EXPECT_EQ(calls.status[0].code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls.status[0].message(), "queue full");
  EXPECT_EQ(calls.response_id[0], "");
}

TEST(SingleResponseSinkTest, NonFinalSendIsAnInternalErrorNamingTheModel) {
  Calls calls;
  auto sink = calls.Sink();
  sink->Send(MakeResponse("part", "streamer"), /*final=*/false);
  // What a decoupled producer would send next is ignored: one completion.
  sink->Send(MakeResponse("part2", "streamer"), /*final=*/false);
  sink->Send(MakeResponse("last", "streamer"), /*final=*/true);
  sink->Finish(Status::Ok());
  ASSERT_EQ(calls.status.size(), 1u);
  EXPECT_EQ(calls.status[0].code(), StatusCode::kInternal);
  EXPECT_NE(calls.status[0].message().find("non-final"), std::string::npos);
  EXPECT_NE(calls.status[0].message().find("'streamer'"), std::string::npos);
  EXPECT_EQ(calls.response_id[0], "");
}

TEST(SingleResponseSinkTest, FinishOkWithoutAResponseIsAnInternalError) {
  Calls calls;
  auto sink = calls.Sink();
  sink->Finish(Status::Ok());
  ASSERT_EQ(calls.status.size(), 1u);
  EXPECT_EQ(calls.status[0].code(), StatusCode::kInternal);
  EXPECT_NE(calls.status[0].message().find("without a response"), std::string::npos);
}

TEST(SingleResponseSinkTest, SignalsAfterTheFinalOneAreIgnored) {
  Calls calls;
  auto sink = calls.Sink();
  sink->Send(MakeResponse("first"), /*final=*/true);
  sink->Send(MakeResponse("second"), /*final=*/true);
  sink->Finish(Internal("late error"));
  ASSERT_EQ(calls.status.size(), 1u);
  EXPECT_TRUE(calls.status[0].ok());
  EXPECT_EQ(calls.response_id[0], "first");

  Calls after_error;
  auto failed = after_error.Sink();
  failed->Finish(Cancelled("gone"));
  failed->Send(MakeResponse("late"), /*final=*/true);
  ASSERT_EQ(after_error.status.size(), 1u);
  EXPECT_EQ(after_error.status[0].code(), StatusCode::kCancelled);
}

// ---- the in-flight decorator ---------------------------------------------------

TEST(InflightTrackerTest, CountsInAtTrackAndOutAtTheFinalSignal) {
  InflightTracker tracker;
  SinkLog log;
  bool inner_destroyed = false;
  auto sink = tracker.Track(std::make_unique<RecordingSink>("a", &log, &inner_destroyed));
  EXPECT_EQ(tracker.count(), 1);
  EXPECT_FALSE(tracker.WaitForIdle(0));
  sink->Send(MakeResponse("p1"), /*final=*/false);  // not the end of the request
  EXPECT_EQ(tracker.count(), 1);
  sink->Send(MakeResponse("p2"), /*final=*/true);
  EXPECT_EQ(tracker.count(), 0);
  EXPECT_TRUE(tracker.WaitForIdle(0));
  // The inner sink took both, in order, and was let go at the final signal.
  auto events = log.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].response_id, "p1");
  EXPECT_FALSE(events[0].final);
  EXPECT_EQ(events[1].response_id, "p2");
  EXPECT_TRUE(events[1].final);
  EXPECT_TRUE(inner_destroyed);
}

TEST(InflightTrackerTest, FinishCountsOutOnceAndLaterCallsAreDropped) {
  InflightTracker tracker;
  SinkLog log;
  auto a = tracker.Track(std::make_unique<RecordingSink>("a", &log));
  auto b = tracker.Track(std::make_unique<RecordingSink>("b", &log));
  EXPECT_EQ(tracker.count(), 2);
  a->Finish(Internal("boom"));
  a->Finish(Internal("again"));                   // a producer bug: ignored
  a->Send(MakeResponse("late"), /*final=*/true);  // likewise
  EXPECT_EQ(tracker.count(), 1);
  b->Finish(Status::Ok());  // "no more responses", without one
  EXPECT_EQ(tracker.count(), 0);
  auto events = log.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].status.message(), "boom");
  EXPECT_TRUE(events[1].status.ok());
}

TEST(InflightTrackerTest, DroppedWithoutAFinalSignalAnswersInternalAndCountsOut) {
  InflightTracker tracker;
  SinkLog log;
  {
    auto sink = tracker.Track(std::make_unique<RecordingSink>("a", &log));
    sink->Send(MakeResponse("p1"), /*final=*/false);
  }
  EXPECT_EQ(tracker.count(), 0);
  auto events = log.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, SinkEvent::kFinish);
  EXPECT_EQ(events[1].status.code(), StatusCode::kInternal);
  EXPECT_NE(events[1].status.message().find("without a final response"), std::string::npos);
}

TEST(InflightTrackerTest, WaitForIdleWakesWhenTheLastRequestFinishesElsewhere) {
  InflightTracker tracker;
  SinkLog log;
  auto sink = tracker.Track(std::make_unique<RecordingSink>("a", &log));
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    sink->Send(MakeResponse("r"), /*final=*/true);
  });
  EXPECT_TRUE(tracker.WaitForIdle(10000));
  finisher.join();
  EXPECT_EQ(log.size(), 1u);
}

TEST(InflightTrackerTest, WaitForIdleTimesOutWhileARequestIsOpen) {
  InflightTracker tracker;
  SinkLog log;
  auto sink = tracker.Track(std::make_unique<RecordingSink>("a", &log));
  EXPECT_FALSE(tracker.WaitForIdle(10));
  sink->Finish(Cancelled("client went away"));
  EXPECT_TRUE(tracker.WaitForIdle(10));
}

}  // namespace
}  // namespace inferd
