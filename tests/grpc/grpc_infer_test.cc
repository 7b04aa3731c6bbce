// gRPC end-to-end: unary ModelInfer against a real inferd: good requests,
// cancellation and deadlines, classification. The bad inputs are in
// grpc_infer_errors_test.cc.
#include <atomic>
#include <climits>
#include <thread>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;

class GrpcInferTest : public GrpcServerTest {};

// ---- good requests -------------------------------------------------------------

TEST_F(GrpcInferTest, SimpleRawContents) {
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(SimpleRequest(1, "req-1"), &r));
  EXPECT_EQ(r.id(), "req-1");
  ExpectSimpleResponse(r, 1);
}

TEST_F(GrpcInferTest, SimpleBatchesAndVersions) {
  for (int64_t batch : {1, 3, 8}) {
    ModelInferRequest req = SimpleRequest(batch);
    req.set_model_version(batch == 3 ? "1" : "");
    ModelInferResponse r;
    ASSERT_GRPC_OK(Infer(req, &r)) << "batch " << batch;
    EXPECT_EQ(r.id(), "");
    ExpectSimpleResponse(r, batch);
  }
}

TEST_F(GrpcInferTest, SimpleTypedContents) {
  ModelInferRequest req;
  req.set_model_name("simple");
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* t = AddInput(req, name, "INT32", {1, 16});
    for (int i = 0; i < 16; ++i) t->mutable_contents()->add_int_contents(name[5] == '0' ? i : 1);
  }
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ExpectSimpleResponse(r, 1);
}

TEST_F(GrpcInferTest, RequestedOutputs) {
  ModelInferRequest req = SimpleRequest(1);
  req.add_outputs()->set_name("OUTPUT1");
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ASSERT_EQ(r.outputs_size(), 1);
  ASSERT_EQ(r.raw_output_contents_size(), 1);
  EXPECT_EQ(r.outputs(0).name(), "OUTPUT1");
  auto diff = FromBytes<int32_t>(r.raw_output_contents(0));
  ASSERT_EQ(diff.size(), 16u);
  EXPECT_EQ(diff[5], 4);

  // Output parameters without meaning over gRPC are ignored; classification 0 is off.
  ModelInferRequest req2 = SimpleRequest(1);
  auto* o = req2.add_outputs();
  o->set_name("OUTPUT0");
  (*o->mutable_parameters())["binary_data"].set_bool_param(true);
  (*o->mutable_parameters())["classification"].set_int64_param(0);
  ASSERT_GRPC_OK(Infer(req2, &r));
  EXPECT_EQ(r.outputs_size(), 1);
}

TEST_F(GrpcInferTest, EmptyTensor) {
  ModelInferRequest req;
  req.set_model_name("identity");
  AddInput(req, "INPUT0", "FP32", {0});
  req.add_raw_input_contents("");
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ASSERT_EQ(r.raw_output_contents_size(), 1);  // one entry per output, even when empty
  EXPECT_EQ(r.raw_output_contents(0), "");
  EXPECT_EQ(r.outputs(0).shape(0), 0);
}

// Every datatype, through the all_types identity model: typed contents where
// the datatype has a field (narrowed for 8/16-bit types), raw otherwise.
TEST_F(GrpcInferTest, TypedContentsForEveryDatatype) {
  struct Case {
    std::string type;
    std::function<void(inference::InferTensorContents*)> fill;
    std::string expected_raw;
    int64_t elements;
  };
  const std::vector<Case> cases = {
      {"BOOL",
       [](auto* c) {
         c->add_bool_contents(true);
         c->add_bool_contents(false);
         c->add_bool_contents(true);
       },
       std::string("\x01\x00\x01", 3), 3},
      {"INT8",
       [](auto* c) {
         c->add_int_contents(-1);
         c->add_int_contents(127);
         c->add_int_contents(300);  // narrowed to its low byte, as Triton
       },
       Bytes(std::vector<int8_t>{-1, 127, 44}), 3},
      {"INT16",
       [](auto* c) {
         c->add_int_contents(-2);
         c->add_int_contents(30000);
       },
       Bytes(std::vector<int16_t>{-2, 30000}), 2},
      {"INT32",
       [](auto* c) {
         c->add_int_contents(-70000);
         c->add_int_contents(INT32_MAX);
       },
       Bytes(std::vector<int32_t>{-70000, INT32_MAX}), 2},
      {"INT64",
       [](auto* c) {
         c->add_int64_contents(INT64_MIN);
         c->add_int64_contents(5);
       },
       Bytes(std::vector<int64_t>{INT64_MIN, 5}), 2},
      {"UINT8",
       [](auto* c) {
         c->add_uint_contents(255);
         c->add_uint_contents(256);
       },
       Bytes(std::vector<uint8_t>{255, 0}), 2},
      {"UINT16",
       [](auto* c) {
         c->add_uint_contents(65535);
         c->add_uint_contents(1);
       },
       Bytes(std::vector<uint16_t>{65535, 1}), 2},
      {"UINT32", [](auto* c) { c->add_uint_contents(4000000000u); },
       Bytes(std::vector<uint32_t>{4000000000u}), 1},
      {"UINT64", [](auto* c) { c->add_uint64_contents(UINT64_MAX); },
       Bytes(std::vector<uint64_t>{UINT64_MAX}), 1},
      {"FP32",
       [](auto* c) {
         c->add_fp32_contents(1.5f);
         c->add_fp32_contents(-0.25f);
       },
       Bytes(std::vector<float>{1.5f, -0.25f}), 2},
      {"FP64", [](auto* c) { c->add_fp64_contents(3.25); }, Bytes(std::vector<double>{3.25}), 1},
      {"BYTES",
       [](auto* c) {
         c->add_bytes_contents("hello");
         c->add_bytes_contents("");
         c->add_bytes_contents(std::string("\x00\xff", 2));
       },
       SerializeBytes({"hello", "", std::string("\x00\xff", 2)}), 3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.type);
    ModelInferRequest req;
    req.set_model_name("all_types");
    auto* t = AddInput(req, "IN_" + c.type, c.type, {c.elements});
    c.fill(t->mutable_contents());
    ModelInferResponse r;
    ASSERT_GRPC_OK(Infer(req, &r));
    ASSERT_EQ(r.outputs_size(), 1);
    EXPECT_EQ(r.outputs(0).name(), "OUT_" + c.type);
    EXPECT_EQ(r.outputs(0).datatype(), c.type);
    EXPECT_EQ(r.outputs(0).shape(0), c.elements);
    ASSERT_EQ(r.raw_output_contents_size(), 1);
    EXPECT_EQ(r.raw_output_contents(0), c.expected_raw);

    // The same tensor as raw contents round-trips unchanged.
    ModelInferRequest raw_req;
    raw_req.set_model_name("all_types");
    AddInput(raw_req, "IN_" + c.type, c.type, {c.elements});
    raw_req.add_raw_input_contents(c.expected_raw);
    ASSERT_GRPC_OK(Infer(raw_req, &r));
    EXPECT_EQ(r.raw_output_contents(0), c.expected_raw);
  }
  // FP16 and BF16 have no typed field: raw only.
  for (const char* type : {"FP16", "BF16"}) {
    ModelInferRequest req;
    req.set_model_name("all_types");
    AddInput(req, std::string("IN_") + type, type, {2});
    req.add_raw_input_contents(std::string("\x00\x3c\x00\x40", 4));
    ModelInferResponse r;
    ASSERT_GRPC_OK(Infer(req, &r)) << type;
    EXPECT_EQ(r.raw_output_contents(0), std::string("\x00\x3c\x00\x40", 4));
  }
}

TEST_F(GrpcInferTest, SeveralInputsRawAndTyped) {
  // Raw index advances only for inputs without typed contents... but typed and
  // raw cannot be mixed in one request (Triton); so: all raw, three inputs.
  ModelInferRequest req;
  req.set_model_name("all_types");
  AddInput(req, "IN_INT32", "INT32", {2});
  AddInput(req, "IN_BYTES", "BYTES", {1});
  AddInput(req, "IN_FP64", "FP64", {1});
  req.add_raw_input_contents(Bytes(std::vector<int32_t>{7, 8}));
  req.add_raw_input_contents(SerializeBytes({"xyz"}));
  req.add_raw_input_contents(Bytes(std::vector<double>{2.5}));
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ASSERT_EQ(r.outputs_size(), 3);
  ASSERT_EQ(r.raw_output_contents_size(), 3);
  std::map<std::string, std::string> by_name;
  for (int i = 0; i < r.outputs_size(); ++i)
    by_name[r.outputs(i).name()] = r.raw_output_contents(i);
  EXPECT_EQ(by_name["OUT_INT32"], Bytes(std::vector<int32_t>{7, 8}));
  EXPECT_EQ(by_name["OUT_BYTES"], SerializeBytes({"xyz"}));
  EXPECT_EQ(by_name["OUT_FP64"], Bytes(std::vector<double>{2.5}));
}

TEST_F(GrpcInferTest, BytesRaw) {
  ModelInferRequest req;
  req.set_model_name("strings");
  AddInput(req, "INPUT0", "BYTES", {1, 2});
  req.add_raw_input_contents(SerializeBytes({"hello", "world"}));
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  EXPECT_EQ(r.outputs(0).datatype(), "BYTES");
  EXPECT_EQ(r.raw_output_contents(0), SerializeBytes({"hello", "world"}));
}

TEST_F(GrpcInferTest, ParametersAccepted) {
  ModelInferRequest req = SimpleRequest(1, "with-params");
  auto& p = *req.mutable_parameters();
  p["custom_int"].set_int64_param(-5);
  p["custom_bool"].set_bool_param(true);
  p["custom_string"].set_string_param("x");
  p["custom_double"].set_double_param(0.5);
  p["priority"].set_uint64_param(0);
  p["timeout"].set_int64_param(10000000);
  p["triton_enable_empty_final_response"].set_bool_param(true);
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ExpectSimpleResponse(r, 1);

  ModelInferRequest req2 = SimpleRequest(1);
  (*req2.mutable_parameters())["priority"].set_int64_param(0);
  ASSERT_GRPC_OK(Infer(req2, &r));
}

TEST_F(GrpcInferTest, CompressedRequestsAndResponses) {
  for (grpc_compression_algorithm algorithm : {GRPC_COMPRESS_GZIP, GRPC_COMPRESS_DEFLATE}) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    ctx.set_compression_algorithm(algorithm);
    ModelInferResponse r;
    ASSERT_GRPC_OK(stub().ModelInfer(&ctx, SimpleRequest(4, "zipped"), &r))
        << "algorithm " << algorithm;
    EXPECT_EQ(r.id(), "zipped");
    ExpectSimpleResponse(r, 4);
  }
  // A large, very compressible request.
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  ModelInferRequest req;
  req.set_model_name("identity");
  std::vector<float> zeros(1 << 20, 0.0f);
  AddInput(req, "INPUT0", "FP32", {static_cast<int64_t>(zeros.size())});
  req.add_raw_input_contents(Bytes(zeros));
  ModelInferResponse r;
  ASSERT_GRPC_OK(stub().ModelInfer(&ctx, req, &r));
  EXPECT_EQ(r.raw_output_contents(0).size(), zeros.size() * 4);
}

TEST_F(GrpcInferTest, LargeMessagesBeyondGrpcDefaultLimit) {
  // gRPC's default receive limit is 4 MiB; inferd allows --grpc-max-message-size (64 MiB).
  ModelInferRequest req;
  req.set_model_name("identity");
  std::vector<float> values(5 << 20);  // 20 MiB
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000);
  AddInput(req, "INPUT0", "FP32", {static_cast<int64_t>(values.size())});
  req.add_raw_input_contents(Bytes(values));
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ASSERT_EQ(r.raw_output_contents_size(), 1);
  EXPECT_TRUE(r.raw_output_contents(0) == req.raw_input_contents(0));
}

TEST_F(GrpcInferTest, ManyConcurrentCalls) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string id = std::to_string(t) + "-" + std::to_string(i);
        ModelInferResponse r;
        grpc::Status s = Infer(SimpleRequest(1 + (i % 3), id), &r);
        if (!s.ok() || r.id() != id || r.raw_output_contents_size() != 2) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- cancellation and deadlines ------------------------------------------------

ModelInferRequest SlowRequest() {
  ModelInferRequest req;
  req.set_model_name("slow");
  AddInput(req, "INPUT0", "FP32", {2});
  req.add_raw_input_contents(Bytes(std::vector<float>{1, 2}));
  return req;
}

TEST_F(GrpcInferTest, DeadlineExpiresWhileModelRuns) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, 50);  // the model takes 300 ms
  ModelInferResponse r;
  EXPECT_TRUE(HasError(stub().ModelInfer(&ctx, SlowRequest(), &r), StatusCode::DEADLINE_EXCEEDED));
  // The late completion must not touch the finished call.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ExpectStillServing();
  ModelInferResponse ok;
  EXPECT_GRPC_OK(Infer(SlowRequest(), &ok));
}

TEST_F(GrpcInferTest, ClientCancelsWhileQueued) {
  // Several slow requests queue behind each other; cancel them all.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::thread> threads;
  std::atomic<int> cancelled{0};
  for (int i = 0; i < 6; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    SetDeadline(*contexts.back());
  }
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      ModelInferResponse r;
      grpc::Status s = stub().ModelInfer(contexts[i].get(), SlowRequest(), &r);
      if (s.error_code() == StatusCode::CANCELLED) ++cancelled;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (auto& c : contexts) c->TryCancel();
  for (auto& t : threads) t.join();
  EXPECT_GE(cancelled.load(), 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ExpectStillServing();
}

TEST_F(GrpcInferTest, TinyDeadlinesUnderLoad) {
  // Races completion against deadline expiry, many times.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0}, expired{0}, other{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(50 + 37 * ((i + t) % 40)));
        ModelInferResponse r;
        grpc::Status s = stub().ModelInfer(&ctx, SimpleRequest(1), &r);
        if (s.ok()) {
          ++ok;
        } else if (s.error_code() == StatusCode::DEADLINE_EXCEEDED) {
          ++expired;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok + expired + other, 800);
  EXPECT_EQ(other.load(), 0);
  ExpectStillServing();
}

TEST_F(GrpcInferTest, Classification) {
  // OUTPUT0 = INPUT0 + INPUT1 = 1..16: the top two are 16 (index 15), 15 (14).
  ModelInferRequest req = SimpleRequest(1);
  auto* o = req.add_outputs();
  o->set_name("OUTPUT0");
  (*o->mutable_parameters())["classification"].set_int64_param(2);
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(req, &r));
  ASSERT_EQ(r.outputs_size(), 1);
  EXPECT_EQ(r.outputs(0).datatype(), "BYTES");
  ASSERT_EQ(r.outputs(0).shape_size(), 2);
  EXPECT_EQ(r.outputs(0).shape(0), 1);
  EXPECT_EQ(r.outputs(0).shape(1), 2);
  EXPECT_EQ(r.raw_output_contents(0), SerializeBytes({"16:15", "15:14"}));

  (*o->mutable_parameters())["classification"].set_string_param("2");
  ExpectInvalid(req, "int64_param");
  (*o->mutable_parameters())["classification"].set_int64_param(-1);
  ExpectInvalid(req, "classification");
  (*o->mutable_parameters())["classification"].set_int64_param(int64_t{1} << 40);
  ExpectInvalid(req, "too large");
}

}  // namespace
}  // namespace inferd::testing
