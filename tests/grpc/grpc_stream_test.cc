// gRPC end-to-end: ModelStreamInfer (bidirectional) against a real inferd:
// ordering, errors in the stream, triton_grpc_error, half-close,
// back-pressure, cancellation and deadlines.
#include <atomic>
#include <functional>
#include <thread>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;
using inference::ModelStreamInferResponse;
using Stream = grpc::ClientReaderWriter<ModelInferRequest, ModelStreamInferResponse>;

class GrpcStreamTest : public GrpcServerTest {};

ModelInferRequest IdentityRequest(const std::string& model, const std::string& id,
                                  std::vector<float> values) {
  ModelInferRequest r;
  r.set_model_name(model);
  r.set_id(id);
  AddInput(r, "INPUT0", "FP32", {static_cast<int64_t>(values.size())});
  r.add_raw_input_contents(Bytes(values));
  return r;
}

// A request whose only fault is an input the model does not have.
ModelInferRequest BadRequest(const std::string& id) {
  ModelInferRequest r = SimpleRequest(1, id);
  r.mutable_inputs(1)->set_name("NOT_AN_INPUT");
  return r;
}

bool FinalFlag(const ModelStreamInferResponse& r) {
  auto it = r.infer_response().parameters().find("triton_final_response");
  return it != r.infer_response().parameters().end() && it->second.bool_param();
}

// Writes `requests` from a second thread (then half-closes) while this one
// reads; returns the responses and the final status.
grpc::Status RunStream(const std::vector<ModelInferRequest>& requests,
                       std::vector<ModelStreamInferResponse>* responses,
                       const std::function<void(grpc::ClientContext&)>& setup = nullptr) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 120000);
  if (setup) setup(ctx);
  std::shared_ptr<Stream> stream = GrpcServerTest::stub().ModelStreamInfer(&ctx);
  std::thread writer([&] {
    for (const auto& r : requests) {
      if (!stream->Write(r)) break;
    }
    stream->WritesDone();
  });
  ModelStreamInferResponse r;
  while (stream->Read(&r)) responses->push_back(r);
  writer.join();
  return stream->Finish();
}

TEST_F(GrpcStreamTest, ResponsesInRequestOrder) {
  std::vector<ModelInferRequest> requests;
  for (int i = 0; i < 200; ++i)
    requests.push_back(SimpleRequest(1 + i % 4, "s-" + std::to_string(i)));
  std::vector<ModelStreamInferResponse> responses;
  ASSERT_GRPC_OK(RunStream(requests, &responses));
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t i = 0; i < responses.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(responses[i].error_message(), "");
    EXPECT_EQ(responses[i].infer_response().id(), "s-" + std::to_string(i));
    EXPECT_TRUE(FinalFlag(responses[i]));
    ExpectSimpleResponse(responses[i].infer_response(), 1 + static_cast<int64_t>(i) % 4);
  }
}

TEST_F(GrpcStreamTest, MixedModelsStayInOrder) {
  // The slow model's response comes first although it completes last.
  std::vector<ModelInferRequest> requests;
  requests.push_back(IdentityRequest("slow", "m-0", {0.5f}));
  for (int i = 1; i < 30; ++i) {
    if (i % 3 == 0) {
      requests.push_back(IdentityRequest("identity", "m-" + std::to_string(i), {float(i)}));
    } else if (i % 3 == 1) {
      requests.push_back(SimpleRequest(1, "m-" + std::to_string(i)));
    } else {
      ModelInferRequest r;
      r.set_model_name("strings");
      r.set_id("m-" + std::to_string(i));
      AddInput(r, "INPUT0", "BYTES", {1, 1});
      r.add_raw_input_contents(SerializeBytes({"text-" + std::to_string(i)}));
      requests.push_back(r);
    }
  }
  std::vector<ModelStreamInferResponse> responses;
  ASSERT_GRPC_OK(RunStream(requests, &responses));
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t i = 0; i < responses.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& r = responses[i].infer_response();
    EXPECT_EQ(responses[i].error_message(), "");
    EXPECT_EQ(r.id(), "m-" + std::to_string(i));
    EXPECT_EQ(r.model_name(), requests[i].model_name());
    ASSERT_GE(r.raw_output_contents_size(), 1);
    if (requests[i].model_name() == "strings") {
      EXPECT_EQ(r.raw_output_contents(0), SerializeBytes({"text-" + std::to_string(i)}));
    } else if (requests[i].model_name() != "simple") {
      EXPECT_EQ(r.raw_output_contents(0), requests[i].raw_input_contents(0));
    }
  }
}

TEST_F(GrpcStreamTest, ErrorTravelsInTheStream) {
  std::vector<ModelInferRequest> requests;
  for (int i = 0; i < 60; ++i) {
    const std::string id = "e-" + std::to_string(i);
    if (i == 20) {
      requests.push_back(BadRequest(id));
    } else if (i == 40) {
      ModelInferRequest r = SimpleRequest(1, id);
      r.set_model_name("no_such_model");
      requests.push_back(r);
    } else if (i == 50) {
      ModelInferRequest r = SimpleRequest(1, id);
      r.mutable_raw_input_contents()->RemoveLast();  // a codec error
      requests.push_back(r);
    } else {
      requests.push_back(SimpleRequest(1, id));
    }
  }
  std::vector<ModelStreamInferResponse> responses;
  ASSERT_GRPC_OK(RunStream(requests, &responses));  // the stream stays OK
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t i = 0; i < responses.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& r = responses[i];
    EXPECT_EQ(r.infer_response().id(), "e-" + std::to_string(i));
    // A request rejected before inference carries its id alone, without
    // triton_final_response (as Triton's stream writes it).
    const bool rejected = i == 20 || i == 40 || i == 50;
    EXPECT_EQ(FinalFlag(r), !rejected);
    if (rejected) {
      EXPECT_EQ(r.infer_response().parameters().count("triton_final_response"), 0u);
      EXPECT_EQ(r.infer_response().model_name(), "");
    }
    if (i == 20) {
      EXPECT_NE(r.error_message().find("NOT_AN_INPUT"), std::string::npos) << r.error_message();
      EXPECT_EQ(r.infer_response().raw_output_contents_size(), 0);
    } else if (i == 40) {
      EXPECT_NE(r.error_message().find("Request for unknown model"), std::string::npos)
          << r.error_message();
    } else if (i == 50) {
      EXPECT_NE(r.error_message().find("unable to find data"), std::string::npos)
          << r.error_message();
    } else {
      EXPECT_EQ(r.error_message(), "");
      ExpectSimpleResponse(r.infer_response(), 1);
    }
  }
  ExpectStillServing();
}

TEST_F(GrpcStreamTest, TritonGrpcErrorEndsTheStream) {
  std::vector<ModelInferRequest> requests;
  for (int i = 0; i < 30; ++i) {
    const std::string id = "g-" + std::to_string(i);
    requests.push_back(i == 10 ? BadRequest(id) : SimpleRequest(1, id));
  }
  std::vector<ModelStreamInferResponse> responses;
  const grpc::Status s = RunStream(requests, &responses, [](grpc::ClientContext& ctx) {
    ctx.AddMetadata("triton_grpc_error", "true");
  });
  EXPECT_TRUE(HasError(s, StatusCode::INVALID_ARGUMENT, "NOT_AN_INPUT"));
  // Everything before the failing request was answered, in order; nothing after.
  ASSERT_EQ(responses.size(), 10u);
  for (size_t i = 0; i < responses.size(); ++i) {
    EXPECT_EQ(responses[i].error_message(), "");
    EXPECT_EQ(responses[i].infer_response().id(), "g-" + std::to_string(i));
  }
  ExpectStillServing();

  // An unknown model ends it with NOT_FOUND.
  responses.clear();
  ModelInferRequest unknown = SimpleRequest(1, "u");
  unknown.set_model_name("no_such_model");
  EXPECT_TRUE(HasError(
      RunStream({unknown}, &responses,
                [](grpc::ClientContext& ctx) { ctx.AddMetadata("triton_grpc_error", "true"); }),
      StatusCode::NOT_FOUND, "Request for unknown model"));
  EXPECT_TRUE(responses.empty());
}

TEST_F(GrpcStreamTest, HalfCloseBeforeReadingAnything) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 60000);
  auto stream = stub().ModelStreamInfer(&ctx);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(stream->Write(SimpleRequest(1, std::to_string(i))));
  ASSERT_TRUE(stream->WritesDone());
  ModelStreamInferResponse r;
  int n = 0;
  while (stream->Read(&r)) {
    EXPECT_EQ(r.infer_response().id(), std::to_string(n));
    ++n;
  }
  EXPECT_EQ(n, 100);
  EXPECT_GRPC_OK(stream->Finish());
}

TEST_F(GrpcStreamTest, EmptyStream) {
  std::vector<ModelStreamInferResponse> responses;
  EXPECT_GRPC_OK(RunStream({}, &responses));
  EXPECT_TRUE(responses.empty());
}

TEST_F(GrpcStreamTest, BackPressureWithManyRequestsInFlight) {
  // 2500 requests to a model that takes 1 ms per execution: far more than the
  // stream keeps in flight, so reading pauses and resumes.
  std::vector<ModelInferRequest> requests;
  for (int i = 0; i < 2500; ++i) {
    requests.push_back(IdentityRequest("trickle", std::to_string(i), {float(i)}));
  }
  std::vector<ModelStreamInferResponse> responses;
  ASSERT_GRPC_OK(RunStream(requests, &responses));
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t i = 0; i < responses.size(); ++i) {
    ASSERT_EQ(responses[i].infer_response().id(), std::to_string(i));
    ASSERT_EQ(FromBytes<float>(responses[i].infer_response().raw_output_contents(0)),
              (std::vector<float>{float(i)}));
  }
}

TEST_F(GrpcStreamTest, ManyConcurrentStreams) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<ModelInferRequest> requests;
      for (int i = 0; i < 100; ++i) {
        requests.push_back(SimpleRequest(1, std::to_string(t) + ":" + std::to_string(i)));
      }
      std::vector<ModelStreamInferResponse> responses;
      if (!RunStream(requests, &responses).ok() || responses.size() != requests.size()) {
        ++failures;
        return;
      }
      for (size_t i = 0; i < responses.size(); ++i) {
        if (responses[i].infer_response().id() != requests[i].id()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(GrpcStreamTest, ClientCancelsWithRequestsInFlight) {
  for (int round = 0; round < 3; ++round) {
    grpc::ClientContext ctx;
    SetDeadline(ctx, 60000);
    auto stream = stub().ModelStreamInfer(&ctx);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(stream->Write(IdentityRequest("slow", std::to_string(i), {1})));
    }
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(stream->Write(SimpleRequest(1)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + 100 * round));
    ctx.TryCancel();
    ModelStreamInferResponse r;
    while (stream->Read(&r)) {
    }
    EXPECT_TRUE(HasError(stream->Finish(), StatusCode::CANCELLED));
  }
  // Completions arrive after the streams ended; none may touch them.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ExpectStillServing();
}

TEST_F(GrpcStreamTest, DeadlineExpiresWithRequestsInFlight) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 200);
  auto stream = stub().ModelStreamInfer(&ctx);
  for (int i = 0; i < 3; ++i) stream->Write(IdentityRequest("slow", std::to_string(i), {1}));
  ModelStreamInferResponse r;
  while (stream->Read(&r)) {
  }
  EXPECT_TRUE(HasError(stream->Finish(), StatusCode::DEADLINE_EXCEEDED));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ExpectStillServing();
}

TEST_F(GrpcStreamTest, ClientGoesAwayWithoutReading) {
  // Many responses owed to a client that never reads and then disappears.
  {
    auto channel = NewChannel(server().grpc_target());
    auto stub = GRPCInferenceService::NewStub(channel);
    grpc::ClientContext ctx;
    SetDeadline(ctx, 60000);
    auto stream = stub->ModelStreamInfer(&ctx);
    for (int i = 0; i < 300; ++i) {
      if (!stream->Write(SimpleRequest(8, std::to_string(i)))) break;
    }
    ctx.TryCancel();
    stream->Finish();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ExpectStillServing();
}

}  // namespace
}  // namespace inferd::testing
