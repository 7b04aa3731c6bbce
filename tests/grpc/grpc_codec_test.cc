// Unit tests of the gRPC codec (pure functions) and of the gRPC flags.
#include "frontend/grpc/grpc_codec.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/reserved_parameters.h"
#include "server/command_line.h"

namespace inferd::grpc_frontend {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;

std::shared_ptr<ModelInferRequest> Simple() {
  auto r = std::make_shared<ModelInferRequest>();
  r->set_model_name("simple");
  r->set_model_version("3");
  r->set_id("id-1");
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* t = r->add_inputs();
    t->set_name(name);
    t->set_datatype("INT32");
    t->add_shape(1);
    t->add_shape(4);
    r->add_raw_input_contents(std::string(16, name[5]));
  }
  return r;
}

StatusOr<DecodedInferRequest> Decode(std::shared_ptr<ModelInferRequest> r) {
  return DecodeInferRequest(std::move(r));
}

TEST(GrpcCodecTest, ParseModelVersion) {
  EXPECT_EQ(*ParseModelVersion(""), -1);
  EXPECT_EQ(*ParseModelVersion("0"), 0);
  EXPECT_EQ(*ParseModelVersion("12"), 12);
  EXPECT_EQ(*ParseModelVersion("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"-1", "+1", "a", "1a", " 1", "1 ", "1.0", "9223372036854775808"}) {
    auto v = ParseModelVersion(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(GrpcCodecTest, RawContentsAreReferencedNotCopied) {
  auto msg = Simple();
  const char* raw0 = msg->raw_input_contents(0).data();
  auto d = Decode(msg);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const InferRequest& req = *d->request;
  EXPECT_EQ(req.model_name, "simple");
  EXPECT_EQ(req.model_version, 3);
  EXPECT_EQ(req.id, "id-1");
  ASSERT_EQ(req.inputs.size(), 2u);
  EXPECT_EQ(req.inputs[0].data.data, raw0);  // a view into the message
  EXPECT_EQ(req.inputs[0].data.byte_size, 16u);
  EXPECT_EQ(req.inputs[0].datatype, DataType::kInt32);
  EXPECT_EQ(req.inputs[0].shape, (Shape{1, 4}));
  // The request keeps the message alive.
  std::weak_ptr<ModelInferRequest> weak = msg;
  msg.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(req.inputs[1].data.data[0], '1');
}

TEST(GrpcCodecTest, TypedContentsNarrowAndView) {
  auto msg = std::make_shared<ModelInferRequest>();
  msg->set_model_name("m");
  auto* i8 = msg->add_inputs();
  i8->set_name("A");
  i8->set_datatype("INT8");
  i8->add_shape(3);
  for (int v : {-1, 300, 5}) i8->mutable_contents()->add_int_contents(v);
  auto* u16 = msg->add_inputs();
  u16->set_name("B");
  u16->set_datatype("UINT16");
  u16->add_shape(2);
  for (unsigned v : {65536u + 7u, 9u}) u16->mutable_contents()->add_uint_contents(v);
  auto* f = msg->add_inputs();
  f->set_name("C");
  f->set_datatype("FP32");
  f->add_shape(2);
  f->mutable_contents()->add_fp32_contents(1.5f);
  f->mutable_contents()->add_fp32_contents(2.5f);
  auto* s = msg->add_inputs();
  s->set_name("D");
  s->set_datatype("BYTES");
  s->add_shape(2);
  s->mutable_contents()->add_bytes_contents("ab");
  s->mutable_contents()->add_bytes_contents("");
  const float* fp32 = msg->inputs(2).contents().fp32_contents().data();

  auto d = Decode(msg);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const auto& in = d->request->inputs;
  ASSERT_EQ(in.size(), 4u);
  EXPECT_EQ(std::string(in[0].data.data, in[0].data.byte_size), std::string("\xff\x2c\x05", 3));
  uint16_t u[2];
  ASSERT_EQ(in[1].data.byte_size, 4u);
  std::memcpy(u, in[1].data.data, 4);
  EXPECT_EQ(u[0], 7);
  EXPECT_EQ(u[1], 9);
  EXPECT_EQ(reinterpret_cast<const float*>(in[2].data.data), fp32);  // no copy
  EXPECT_EQ(in[2].data.byte_size, 8u);
  EXPECT_EQ(std::string(in[3].data.data, in[3].data.byte_size), std::string("\x02\x00\x00\x00"
                                                                            "ab\x00\x00\x00\x00",
                                                                            10));
}

TEST(GrpcCodecTest, DataSourceErrors) {
  auto expect_invalid = [](std::shared_ptr<ModelInferRequest> r, const std::string& needle) {
    auto d = Decode(r);
    ASSERT_FALSE(d.ok()) << needle;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(needle), std::string::npos) << d.status().message();
  };
  auto missing = Simple();
  missing->mutable_raw_input_contents()->RemoveLast();
  expect_invalid(missing, "unable to find data for input tensor 'INPUT1'");
  auto extra = Simple();
  extra->add_raw_input_contents("x");
  expect_invalid(extra, "3 entries given, but 2 input(s)");
  auto mixed = Simple();
  mixed->mutable_inputs(0)->mutable_contents()->add_int_contents(1);
  expect_invalid(mixed, "contents field must not be specified");
  auto wrong = Simple();
  wrong->clear_raw_input_contents();
  for (int i = 0; i < 2; ++i) wrong->mutable_inputs(i)->mutable_contents()->add_fp64_contents(1);
  expect_invalid(wrong, "fp64_contents given for datatype INT32, expected int_contents");
  auto fp16 = Simple();
  fp16->clear_raw_input_contents();
  fp16->mutable_inputs(0)->set_datatype("FP16");
  fp16->mutable_inputs(0)->mutable_contents();
  expect_invalid(fp16, "FP16 data has no typed 'contents' field");
  auto datatype = Simple();
  datatype->mutable_inputs(1)->set_datatype("int32");
  expect_invalid(datatype, "unknown datatype 'int32'");
  auto shm = Simple();
  (*shm->mutable_inputs(0)->mutable_parameters())["shared_memory_offset"].set_int64_param(0);
  expect_invalid(shm, "need 'shared_memory_region'");
  auto shm_off = Simple();  // a region, but no server-side manager
  (*shm_off->mutable_inputs(0)->mutable_parameters())["shared_memory_region"].set_string_param("r");
  (*shm_off->mutable_inputs(0)->mutable_parameters())["shared_memory_byte_size"].set_int64_param(4);
  expect_invalid(shm_off, "shared memory is not enabled");
  auto version = Simple();
  version->set_model_version("v1");
  expect_invalid(version, "version");
}

// The codec only translates the wire's parameter types, keys untouched;
// the core applies the reserved ones (reserved_parameters_test.cc has the
// whole key x type table).
TEST(GrpcCodecTest, Parameters) {
  auto msg = Simple();
  auto& p = *msg->mutable_parameters();
  p["sequence_id"].set_string_param("corr");
  p["sequence_start"].set_bool_param(true);
  p["sequence_end"].set_bool_param(false);
  p["priority"].set_uint64_param(3);
  p["timeout"].set_int64_param(100);
  p["triton_enable_empty_final_response"].set_bool_param(true);
  p["a"].set_int64_param(-2);
  p["b"].set_bool_param(true);
  p["c"].set_string_param("s");
  p["d"].set_double_param(0.25);
  p["e"].set_uint64_param(7);
  auto d = Decode(msg);
  ASSERT_TRUE(d.ok()) << d.status().message();
  InferRequest& r = *d->request;
  EXPECT_EQ(r.parameters.size(), 11u);  // translated, nothing applied yet
  EXPECT_EQ(std::get<uint64_t>(r.parameters.at("priority")), 3u);
  EXPECT_EQ(std::get<uint64_t>(r.parameters.at("e")), 7u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(r.correlation_id));

  ASSERT_TRUE(ApplyReservedParameters(r).ok());
  EXPECT_EQ(std::get<std::string>(r.correlation_id), "corr");
  EXPECT_TRUE(r.sequence_start);
  EXPECT_FALSE(r.sequence_end);
  EXPECT_EQ(r.priority, 3u);
  EXPECT_EQ(r.timeout_us, 100u);
  EXPECT_TRUE(r.enable_empty_final_response);
  EXPECT_EQ(r.parameters.size(), 5u);  // reserved keys are not custom parameters
  EXPECT_EQ(std::get<int64_t>(r.parameters.at("a")), -2);
  EXPECT_EQ(std::get<bool>(r.parameters.at("b")), true);
  EXPECT_EQ(std::get<std::string>(r.parameters.at("c")), "s");
  EXPECT_EQ(std::get<double>(r.parameters.at("d")), 0.25);
  EXPECT_EQ(std::get<uint64_t>(r.parameters.at("e")), 7u);

  auto numeric = Simple();
  (*numeric->mutable_parameters())["sequence_id"].set_int64_param(42);
  (*numeric->mutable_parameters())["priority"].set_int64_param(2);
  auto n = Decode(numeric);
  ASSERT_TRUE(n.ok());
  ASSERT_TRUE(ApplyReservedParameters(*n->request).ok());
  EXPECT_EQ(std::get<uint64_t>(n->request->correlation_id), 42u);
  EXPECT_EQ(n->request->priority, 2u);

  auto zero = Simple();
  (*zero->mutable_parameters())["sequence_id"].set_int64_param(0);
  auto z = Decode(zero);
  ASSERT_TRUE(z.ok());
  ASSERT_TRUE(ApplyReservedParameters(*z->request).ok());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(z->request->correlation_id));

  // A parameter without a value has no neutral type: the codec refuses it.
  auto empty = Simple();
  (*empty->mutable_parameters())["custom"];
  auto e = Decode(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("'custom' has no value"), std::string::npos);

  // A mistyped reserved key decodes; the core names key, expected and given type.
  auto mistyped = Simple();
  (*mistyped->mutable_parameters())["priority"].set_string_param("high");
  auto m = Decode(mistyped);
  ASSERT_TRUE(m.ok());
  Status s = ApplyReservedParameters(*m->request);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "parameter 'priority' must be a non-negative integer, got string 'high'");
}

TEST(GrpcCodecTest, RequestedOutputs) {
  auto msg = Simple();
  msg->add_outputs()->set_name("OUTPUT1");
  auto* o = msg->add_outputs();
  o->set_name("OUTPUT0");
  (*o->mutable_parameters())["binary_data"].set_bool_param(true);
  auto d = Decode(msg);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->request->outputs.size(), 2u);
  EXPECT_EQ(d->request->outputs[0].name, "OUTPUT1");
  EXPECT_EQ(d->request->outputs[1].classification, 0u);

  (*o->mutable_parameters())["classification"].set_int64_param(3);
  auto c = Decode(msg);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->request->outputs[1].classification, 3u);

  (*o->mutable_parameters())["classification"].set_int64_param(int64_t{UINT32_MAX} + 1);
  auto big = Decode(msg);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("too large"), std::string::npos);
}

TEST(GrpcCodecTest, EncodeUsesRawOutputContentsInOrder) {
  InferResponse resp;
  resp.model_name = "m";
  resp.model_version = 7;
  resp.id = "r";
  resp.parameters["p"] = int64_t{5};
  resp.parameters["q"] = uint64_t{6};
  auto& a = resp.AddOutput("B_OUT", DataType::kInt32, {2}, 8);
  std::memset(a.buffer.data(), 1, 8);
  resp.AddOutput("A_OUT", DataType::kFp32, {0}, 0);
  ModelInferResponse out;
  out.add_outputs()->set_name("stale");  // cleared first
  ASSERT_TRUE(EncodeInferResponse(resp, {}, &out).ok());
  EXPECT_EQ(out.model_name(), "m");
  EXPECT_EQ(out.model_version(), "7");
  EXPECT_EQ(out.id(), "r");
  ASSERT_EQ(out.outputs_size(), 2);
  ASSERT_EQ(out.raw_output_contents_size(), 2);
  EXPECT_EQ(out.outputs(0).name(), "B_OUT");
  EXPECT_EQ(out.outputs(0).datatype(), "INT32");
  EXPECT_EQ(out.outputs(0).shape(0), 2);
  EXPECT_FALSE(out.outputs(0).has_contents());
  EXPECT_EQ(out.raw_output_contents(0), std::string(8, '\x01'));
  EXPECT_EQ(out.outputs(1).name(), "A_OUT");
  EXPECT_EQ(out.raw_output_contents(1), "");
  EXPECT_EQ(out.parameters().at("p").int64_param(), 5);
  EXPECT_EQ(out.parameters().at("q").uint64_param(), 6u);
}

TEST(GrpcCodecTest, StatusMapsByValue) {
  EXPECT_TRUE(ToGrpcStatus(Status::Ok()).ok());
  const auto s = ToGrpcStatus(NotFound("x"));
  EXPECT_EQ(s.error_code(), ::grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "x");
  EXPECT_EQ(ToGrpcStatus(Unavailable("u")).error_code(), ::grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ToGrpcStatus(InvalidArgument("i")).error_code(), ::grpc::StatusCode::INVALID_ARGUMENT);
}

// A cheap fuzz pass: random mutations of a valid request, parsed and decoded,
// must never crash (run under ASan in `make test-asan`).
TEST(GrpcCodecTest, RandomMutationsNeverCrash) {
  ModelInferRequest seed = *Simple();
  (*seed.mutable_parameters())["sequence_id"].set_string_param("s");
  auto* t = seed.add_inputs();
  t->set_name("S");
  t->set_datatype("BYTES");
  t->add_shape(1);
  t->mutable_contents()->add_bytes_contents("hello");
  seed.add_outputs()->set_name("OUTPUT0");
  const std::string wire = seed.SerializeAsString();
  std::mt19937 rng(1234);
  int decoded = 0;
  google::protobuf::LogSilencer quiet;  // invalid UTF-8 in string fields is logged
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = wire;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 3) {
        case 0:
          bytes[pos] = static_cast<char>(rng());
          break;
        case 1:
          bytes.erase(pos, 1 + rng() % 8);
          break;
        default:
          bytes.insert(pos, 1, static_cast<char>(rng()));
      }
      if (bytes.empty()) bytes = "x";
    }
    auto msg = std::make_shared<ModelInferRequest>();
    if (!msg->ParseFromString(bytes)) continue;
    auto d = DecodeInferRequest(msg);
    if (d.ok()) ++decoded;
  }
  EXPECT_GT(decoded, 0);
}

// ---- flags ---------------------------------------------------------------------

TEST(GrpcFlagsTest, DefaultsAreTritons) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->allow_grpc);
  EXPECT_EQ(cl->grpc.address, "0.0.0.0");
  EXPECT_EQ(cl->grpc.port, 8001);
  // Not Triton's INT32_MAX: inferd bounds messages like HTTP bodies
  // (--grpc-max-message-size, docs/security.md).
  EXPECT_EQ(cl->grpc.max_message_bytes, 64 << 20);
  EXPECT_EQ(cl->grpc.max_concurrent_streams, 128);
  EXPECT_FALSE(cl->grpc.tls.enabled);
  EXPECT_EQ(cl->grpc.keepalive_time_ms, 7200000);
  EXPECT_EQ(cl->grpc.keepalive_timeout_ms, 20000);
  EXPECT_FALSE(cl->grpc.keepalive_permit_without_calls);
  EXPECT_EQ(cl->grpc.http2_max_pings_without_data, 2);
  EXPECT_EQ(cl->grpc.http2_min_recv_ping_interval_without_data_ms, 300000);
  EXPECT_EQ(cl->grpc.http2_max_ping_strikes, 2);
}

TEST(GrpcFlagsTest, ParsesEveryGrpcFlag) {
  auto cl = ParseCommandLine(
      {"--model-repository=/m", "--allow-grpc=false", "--grpc-address", "127.0.0.1",
       "--grpc-port=0", "--grpc-keepalive-time=1000", "--grpc-keepalive-timeout=500",
       "--grpc-keepalive-permit-without-calls=on", "--grpc-http2-max-pings-without-data=0",
       "--grpc-http2-min-recv-ping-interval-without-data=10", "--grpc-http2-max-ping-strikes=5"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_FALSE(cl->allow_grpc);
  EXPECT_EQ(cl->grpc.address, "127.0.0.1");
  EXPECT_EQ(cl->grpc.port, 0);
  EXPECT_EQ(cl->grpc.keepalive_time_ms, 1000);
  EXPECT_EQ(cl->grpc.keepalive_timeout_ms, 500);
  EXPECT_TRUE(cl->grpc.keepalive_permit_without_calls);
  EXPECT_EQ(cl->grpc.http2_max_pings_without_data, 0);
  EXPECT_EQ(cl->grpc.http2_min_recv_ping_interval_without_data_ms, 10);
  EXPECT_EQ(cl->grpc.http2_max_ping_strikes, 5);
}

TEST(GrpcFlagsTest, BadValuesNameTheFlag) {
  for (const std::string flag :
       {"--grpc-port=65536", "--grpc-keepalive-time=0", "--grpc-keepalive-timeout=x",
        "--grpc-keepalive-permit-without-calls=2", "--grpc-http2-max-ping-strikes=-1"}) {
    auto cl = ParseCommandLine({"--model-repository=/m", flag});
    ASSERT_FALSE(cl.ok()) << flag;
    EXPECT_NE(cl.status().message().find(flag.substr(0, flag.find('='))), std::string::npos)
        << cl.status().message();
  }
}

}  // namespace
}  // namespace inferd::grpc_frontend
