// The response stream of a request whose backend took its answer over
// (scheduler/response_stream.h), through RunBatch as backends use it:
// decoupled rules (0..N responses, FINAL alone, pruning without failing),
// the one-response rule of other models, errors set on the item, a stream
// dropped before FINAL, cancellation, statistics.
#include "scheduler/response_stream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "scheduler/batch_runner.h"

namespace inferd {
namespace {

// Keeps every call it gets. Calls never overlap (the stream serialises
// them), checked by the test through the order.
struct Capture {
  std::vector<std::unique_ptr<InferResponse>> responses;
  std::vector<bool> finals;
  std::vector<Status> finishes;
  int calls_after_final = 0;
  bool done = false;
};

class CaptureSink : public InferResponseSink {
 public:
  explicit CaptureSink(Capture* c) : c_(c) {}
  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (c_->done) ++c_->calls_after_final;
    c_->responses.push_back(std::move(response));
    c_->finals.push_back(final);
    c_->done = c_->done || final;
  }
  void Finish(Status status) override {
    if (c_->done) ++c_->calls_after_final;
    c_->finishes.push_back(std::move(status));
    c_->done = true;
  }

 private:
  Capture* c_;
};

// Runs `body` on each item of the batch, inside Execute.
class ScriptedInstance : public BackendInstance {
 public:
  explicit ScriptedInstance(std::function<void(ExecutionItem&)> body) : body_(std::move(body)) {}
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) body_(item);
  }

 private:
  std::function<void(ExecutionItem&)> body_;
};

std::unique_ptr<InferResponse> Response(std::initializer_list<const char*> outputs) {
  auto r = std::make_unique<InferResponse>();
  for (const char* name : outputs) {
    auto& o = r->AddOutput(name, DataType::kInt32, {1}, 4);
    const int32_t v = 7;
    std::memcpy(o.buffer.data(), &v, 4);
  }
  return r;
}

class ResponseStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.name = "m";
    spec_.decoupled = true;
    ctx_.model = ModelIdentity{"m", 3, &spec_};
    ctx_.stats = &stats_;
    ctx_.clock = RealClock::Get();
  }

  // Runs one request with `requested` outputs through `instance`.
  void Run(BackendInstance& instance, std::vector<std::string> requested = {},
           std::shared_ptr<std::atomic<bool>> cancel = nullptr) {
    auto p = std::make_unique<PendingRequest>();
    p->request = std::make_unique<InferRequest>();
    p->request->id = "req-1";
    for (auto& name : requested) p->request->outputs.push_back(RequestedOutput{name, 0});
    p->request->cancel_flag = std::move(cancel);
    p->sink = std::make_unique<CaptureSink>(&capture_);
    std::vector<std::unique_ptr<PendingRequest>> batch;
    batch.push_back(std::move(p));
    RunBatch(ctx_, instance, batch);
  }

  ModelSpec spec_;
  ModelStats stats_;
  BatchContext ctx_;
  Capture capture_;
  std::shared_ptr<ResponseStream> kept_;  // a stream the "backend" keeps past Execute
};

TEST_F(ResponseStreamTest, DecoupledSendsManyThenFinalAloneAndStampsEachResponse) {
  ScriptedInstance inst([&](ExecutionItem& item) {
    auto s = item.TakeOverResponse();
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_TRUE((*s)->decoupled());
    EXPECT_EQ(item.TakeOverResponse().status().code(), StatusCode::kFailedPrecondition);
    kept_ = *s;
  });
  Run(inst, {"OUT"});
  EXPECT_TRUE(capture_.responses.empty()) << "nothing is sent for a taken request";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(kept_->Send(Response({"OUT", "IDX"}), false).ok());
  // a requested output missing from a decoupled response is not an error
  ASSERT_TRUE(kept_->Send(Response({"IDX"}), false).ok());
  ASSERT_TRUE(kept_->Send(nullptr, true).ok());
  ASSERT_EQ(capture_.responses.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    const auto& r = *capture_.responses[i];
    EXPECT_EQ(r.id, "req-1");
    EXPECT_EQ(r.model_name, "m");
    EXPECT_EQ(r.model_version, 3);
    ASSERT_EQ(r.outputs.size(), 1u) << "IDX was not requested: pruned";
    EXPECT_EQ(r.outputs[0].name, "OUT");
    EXPECT_FALSE(capture_.finals[i]);
  }
  EXPECT_TRUE(capture_.responses[3]->outputs.empty());
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_TRUE(capture_.finishes[0].ok());
  EXPECT_EQ(kept_->Send(Response({"OUT"}), false).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(kept_->Send(nullptr, false).code(), StatusCode::kFailedPrecondition);
  kept_.reset();
  EXPECT_EQ(capture_.calls_after_final, 0);
  const auto snap = stats_.Snapshot();
  EXPECT_EQ(snap.success.count, 1u);
  EXPECT_EQ(snap.fail.count, 0u);
}

TEST_F(ResponseStreamTest, FinalWithTheLastResponse) {
  ScriptedInstance inst([&](ExecutionItem& item) { kept_ = *item.TakeOverResponse(); });
  Run(inst);
  ASSERT_TRUE(kept_->Send(Response({"OUT"}), true).ok());
  ASSERT_EQ(capture_.finals, std::vector<bool>{true});
  EXPECT_TRUE(capture_.finishes.empty());
}

TEST_F(ResponseStreamTest, ResponsesFromAnotherThreadAfterExecuteReturned) {
  std::thread worker;
  ScriptedInstance inst([&](ExecutionItem& item) {
    auto s = *item.TakeOverResponse();
    worker = std::thread([s] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // after Execute, mostly
      for (int i = 0; i < 100; ++i) (void)s->Send(Response({"OUT"}), false);
      (void)s->Send(nullptr, true);
    });
  });
  Run(inst);
  worker.join();
  EXPECT_EQ(capture_.responses.size(), 100u);
  ASSERT_EQ(capture_.finishes.size(), 1u);
}

TEST_F(ResponseStreamTest, DroppedBeforeFinalFinishesWithInternal) {
  ScriptedInstance inst([&](ExecutionItem& item) {
    auto s = *item.TakeOverResponse();
    ASSERT_TRUE(s->Send(Response({"OUT"}), false).ok());
  });  // the stream goes with the item's reference once RunBatch is done
  Run(inst);
  ASSERT_EQ(capture_.responses.size(), 1u);
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_EQ(capture_.finishes[0].code(), StatusCode::kInternal);
  EXPECT_EQ(capture_.finishes[0].message(),
            "backend released the request without a final response");
  EXPECT_EQ(stats_.Snapshot().fail.count, 1u);
}

TEST_F(ResponseStreamTest, AnErrorSetOnTheItemIsTheFinalAnswerUnlessFinalWasSent) {
  ScriptedInstance failing([&](ExecutionItem& item) {
    kept_ = *item.TakeOverResponse();
    item.status = InvalidArgument("bad input");
  });
  Run(failing);
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_EQ(capture_.finishes[0].message(), "bad input");
  EXPECT_EQ(kept_->Send(nullptr, true).code(), StatusCode::kFailedPrecondition);
  kept_.reset();

  capture_ = Capture();
  ScriptedInstance late([&](ExecutionItem& item) {
    auto s = *item.TakeOverResponse();
    ASSERT_TRUE(s->Send(nullptr, true).ok());
    item.status = Internal("too late");
  });
  Run(late);
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_TRUE(capture_.finishes[0].ok());
  EXPECT_EQ(capture_.calls_after_final, 0);
}

TEST_F(ResponseStreamTest, NotDecoupledTakesExactlyOneResponse) {
  spec_.decoupled = false;
  ScriptedInstance inst([&](ExecutionItem& item) { kept_ = *item.TakeOverResponse(); });
  Run(inst, {"OUT"});
  EXPECT_FALSE(kept_->decoupled());
  ASSERT_TRUE(kept_->Send(Response({"OUT", "IDX"}), false).ok());
  EXPECT_TRUE(capture_.responses.empty()) << "held until FINAL";
  EXPECT_EQ(kept_->Send(Response({"OUT"}), false).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(kept_->Send(nullptr, true).ok());
  ASSERT_EQ(capture_.responses.size(), 1u);
  EXPECT_EQ(capture_.finals, std::vector<bool>{true});
  EXPECT_EQ(capture_.responses[0]->outputs.size(), 1u);
}

TEST_F(ResponseStreamTest, NotDecoupledWithoutAResponseOrAnOutputFails) {
  spec_.decoupled = false;
  ScriptedInstance inst([&](ExecutionItem& item) { kept_ = *item.TakeOverResponse(); });
  Run(inst);
  ASSERT_TRUE(kept_->Send(nullptr, true).ok());
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_EQ(capture_.finishes[0].code(), StatusCode::kInternal);

  capture_ = Capture();
  Run(inst, {"OUT"});
  ASSERT_TRUE(kept_->Send(Response({"IDX"}), true).ok());
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_NE(capture_.finishes[0].message().find("requested output 'OUT'"), std::string::npos);
}

TEST_F(ResponseStreamTest, AfterCancellationResponsesAreDroppedAndFinalCancels) {
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  ScriptedInstance inst([&](ExecutionItem& item) { kept_ = *item.TakeOverResponse(); });
  Run(inst, {}, cancel);
  ASSERT_TRUE(kept_->Send(Response({"OUT"}), false).ok());
  cancel->store(true);
  EXPECT_TRUE(kept_->IsCancelled());
  ASSERT_TRUE(kept_->Send(Response({"OUT"}), false).ok());
  ASSERT_TRUE(kept_->Send(nullptr, true).ok());
  EXPECT_EQ(capture_.responses.size(), 1u);
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_EQ(capture_.finishes[0].code(), StatusCode::kCancelled);
}

TEST_F(ResponseStreamTest, ErrorsThroughTheStreamAreFinal) {
  ScriptedInstance inst([&](ExecutionItem& item) { kept_ = *item.TakeOverResponse(); });
  Run(inst);
  ASSERT_TRUE(kept_->Send(Response({"OUT"}), false).ok());
  kept_->SendError(Unavailable("worker died"));
  kept_->SendError(Internal("ignored"));
  ASSERT_EQ(capture_.finishes.size(), 1u);
  EXPECT_EQ(capture_.finishes[0].message(), "worker died");
  EXPECT_EQ(stats_.Snapshot().fail.count, 1u);
}

TEST_F(ResponseStreamTest, WithoutATakeoverTheAnswerCannotBeTaken) {
  ExecutionItem item;
  EXPECT_EQ(item.TakeOverResponse().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace inferd
