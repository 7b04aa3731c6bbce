// gRPC end-to-end: every bad input that applies to a unary ModelInfer, against
// a real inferd. After each error case the server must still serve.
#include <climits>

#include "grpc_test_util.h"

namespace inferd::testing {
namespace {

using grpc::StatusCode;

class GrpcInferErrorTest : public GrpcServerTest {};

// ---- bad requests: model and version -------------------------------------------

TEST_F(GrpcInferErrorTest, UnknownModel) {
  ModelInferRequest req = SimpleRequest(1);
  req.set_model_name("no_such_model");
  ExpectRejected(req, StatusCode::NOT_FOUND, "Request for unknown model");
  // Reported as unknown model whatever else is wrong with the request.
  req.clear_raw_input_contents();
  ExpectRejected(req, StatusCode::NOT_FOUND, "Request for unknown model");
  req.set_model_name("");
  ExpectRejected(req, StatusCode::NOT_FOUND, "Request for unknown model");
}

TEST_F(GrpcInferErrorTest, UnknownVersion) {
  ModelInferRequest req = SimpleRequest(1);
  req.set_model_version("9");
  ExpectRejected(req, StatusCode::NOT_FOUND, "Request for unknown model");
}

TEST_F(GrpcInferErrorTest, BadVersionStrings) {
  for (const char* v : {"abc", "-1", "+1", "1.5", " 1", "1x", "0x10", "18446744073709551616"}) {
    ModelInferRequest req = SimpleRequest(1);
    req.set_model_version(v);
    ExpectInvalid(req, "version");
  }
}

// ---- bad requests: tensors (rejected by the core's validation) -----------------

TEST_F(GrpcInferErrorTest, WrongDatatype) {
  ModelInferRequest req = SimpleRequest(1);
  req.mutable_inputs(0)->set_datatype("FP32");
  ExpectInvalid(req, "data-type");
}

TEST_F(GrpcInferErrorTest, UnknownDatatype) {
  for (const char* t : {"FLOAT", "int32", "", "TYPE_INT32"}) {
    ModelInferRequest req = SimpleRequest(1);
    req.mutable_inputs(0)->set_datatype(t);
    ExpectInvalid(req, "datatype");
  }
}

TEST_F(GrpcInferErrorTest, ShapeMismatch) {
  ModelInferRequest req = SimpleRequest(1);
  req.mutable_inputs(0)->set_shape(1, 15);
  ExpectInvalid(req, "INPUT0");
  ModelInferRequest req2 = SimpleRequest(1);
  req2.mutable_inputs(1)->clear_shape();
  req2.mutable_inputs(1)->add_shape(16);  // missing batch dimension
  ExpectInvalid(req2, "INPUT1");
}

TEST_F(GrpcInferErrorTest, NegativeDims) {
  ModelInferRequest req = SimpleRequest(1);
  req.mutable_inputs(0)->set_shape(0, -1);
  ExpectInvalid(req, "INPUT0");
  ModelInferRequest req2;
  req2.set_model_name("identity");
  AddInput(req2, "INPUT0", "FP32", {-4});
  req2.add_raw_input_contents("");
  ExpectInvalid(req2, "INPUT0");
}

TEST_F(GrpcInferErrorTest, OverflowingDims) {
  ModelInferRequest req;
  req.set_model_name("identity");
  AddInput(req, "INPUT0", "FP32", {INT64_MAX});
  req.add_raw_input_contents(Bytes(std::vector<float>{1, 2}));
  ExpectInvalid(req, "INPUT0");
  ModelInferRequest req2;
  req2.set_model_name("all_types");
  AddInput(req2, "IN_FP32", "FP32", {int64_t{1} << 62});  // element count fits, bytes do not
  req2.add_raw_input_contents(Bytes(std::vector<float>{1}));
  ExpectInvalid(req2, "IN_FP32");
  ModelInferRequest req3;
  req3.set_model_name("strings");
  AddInput(req3, "INPUT0", "BYTES", {int64_t{1} << 40, int64_t{1} << 40});
  req3.add_raw_input_contents(SerializeBytes({"a"}));
  ExpectInvalid(req3, "INPUT0");
}

TEST_F(GrpcInferErrorTest, BatchLimits) {
  ExpectInvalid(SimpleRequest(9), "batch");
  ModelInferRequest req = SimpleRequest(1);
  for (int i = 0; i < 2; ++i) req.mutable_inputs(i)->set_shape(0, 0);
  req.set_raw_input_contents(0, "");
  req.set_raw_input_contents(1, "");
  ExpectInvalid(req, "batch");
  ModelInferRequest mixed = SimpleRequest(2);
  mixed.mutable_inputs(1)->set_shape(0, 1);  // inputs disagree on the batch size
  mixed.set_raw_input_contents(1, mixed.raw_input_contents(1).substr(0, 64));
  ExpectInvalid(mixed, "batch");
}

TEST_F(GrpcInferErrorTest, ByteSizeMismatch) {
  ModelInferRequest req = SimpleRequest(1);
  req.set_raw_input_contents(0, req.raw_input_contents(0).substr(0, 60));
  ExpectInvalid(req, "INPUT0");
  ModelInferRequest req2 = SimpleRequest(1);
  req2.set_raw_input_contents(1, req2.raw_input_contents(1) + "x");
  ExpectInvalid(req2, "INPUT1");
}

TEST_F(GrpcInferErrorTest, MissingUnknownAndDuplicateInputs) {
  ModelInferRequest missing = SimpleRequest(1);
  missing.mutable_inputs()->RemoveLast();
  missing.mutable_raw_input_contents()->RemoveLast();
  ExpectInvalid(missing, "INPUT1");

  ModelInferRequest unknown = SimpleRequest(1);
  unknown.mutable_inputs(1)->set_name("INPUT7");
  ExpectInvalid(unknown, "INPUT7");

  ModelInferRequest duplicate = SimpleRequest(1);
  duplicate.mutable_inputs(1)->set_name("INPUT0");
  ExpectInvalid(duplicate, "INPUT0");

  ModelInferRequest none;
  none.set_model_name("simple");
  ExpectInvalid(none, "INPUT0");
}

TEST_F(GrpcInferErrorTest, UnknownAndDuplicateOutputs) {
  ModelInferRequest unknown = SimpleRequest(1);
  unknown.add_outputs()->set_name("OUTPUT9");
  ExpectInvalid(unknown, "OUTPUT9");

  ModelInferRequest duplicate = SimpleRequest(1);
  duplicate.add_outputs()->set_name("OUTPUT0");
  duplicate.add_outputs()->set_name("OUTPUT0");
  ExpectInvalid(duplicate, "OUTPUT0");
}

// ---- bad requests: data sources (rejected by the codec) ------------------------

TEST_F(GrpcInferErrorTest, RawContentsMixedWithTypedContents) {
  ModelInferRequest req = SimpleRequest(1);
  req.mutable_raw_input_contents()->RemoveLast();
  for (int i = 0; i < 16; ++i) req.mutable_inputs(1)->mutable_contents()->add_int_contents(1);
  ExpectInvalid(req, "raw_input_contents");
  // Even an empty `contents` message counts as typed contents.
  ModelInferRequest req2 = SimpleRequest(1);
  req2.mutable_inputs(0)->mutable_contents();
  ExpectInvalid(req2, "raw_input_contents");
}

TEST_F(GrpcInferErrorTest, RawContentsMissing) {
  ModelInferRequest req = SimpleRequest(1);
  req.mutable_raw_input_contents()->RemoveLast();
  ExpectInvalid(req, "unable to find data for input tensor 'INPUT1'");
  ModelInferRequest req2 = SimpleRequest(1);
  req2.clear_raw_input_contents();
  ExpectInvalid(req2, "unable to find data for input tensor 'INPUT0'");
}

TEST_F(GrpcInferErrorTest, RawContentsExtra) {
  ModelInferRequest req = SimpleRequest(1);
  req.add_raw_input_contents(req.raw_input_contents(0));
  ExpectInvalid(req, "raw_input_contents");
}

TEST_F(GrpcInferErrorTest, ContentsOfTheWrongType) {
  ModelInferRequest req;
  req.set_model_name("simple");
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* t = AddInput(req, name, "INT32", {1, 16});
    for (int i = 0; i < 16; ++i) t->mutable_contents()->add_fp32_contents(1.0f);
  }
  ExpectInvalid(req, "fp32_contents");

  ModelInferRequest two_fields;
  two_fields.set_model_name("all_types");
  auto* t = AddInput(two_fields, "IN_INT64", "INT64", {1});
  t->mutable_contents()->add_int64_contents(1);
  t->mutable_contents()->add_int_contents(1);
  ExpectInvalid(two_fields, "int_contents");

  ModelInferRequest fp16;
  fp16.set_model_name("all_types");
  AddInput(fp16, "IN_FP16", "FP16", {1})->mutable_contents()->add_fp32_contents(1.0f);
  ExpectInvalid(fp16, "FP16");

  ModelInferRequest uint_for_int8;
  uint_for_int8.set_model_name("all_types");
  AddInput(uint_for_int8, "IN_INT8", "INT8", {1})->mutable_contents()->add_uint_contents(1);
  ExpectInvalid(uint_for_int8, "uint_contents");
}

TEST_F(GrpcInferErrorTest, TypedContentsWrongCount) {
  ModelInferRequest req;
  req.set_model_name("simple");
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* t = AddInput(req, name, "INT32", {1, 16});
    for (int i = 0; i < 15; ++i) t->mutable_contents()->add_int_contents(1);
  }
  ExpectInvalid(req, "INPUT0");

  ModelInferRequest bytes;
  bytes.set_model_name("strings");
  AddInput(bytes, "INPUT0", "BYTES", {1, 3})->mutable_contents()->add_bytes_contents("only one");
  ExpectInvalid(bytes, "INPUT0");
}

TEST_F(GrpcInferErrorTest, BytesPrefixPastTheEnd) {
  ModelInferRequest req;
  req.set_model_name("strings");
  AddInput(req, "INPUT0", "BYTES", {1, 1});
  std::string raw = SerializeBytes({"abc"});
  raw[0] = 100;  // claims 100 bytes, 3 follow
  req.add_raw_input_contents(raw);
  ExpectInvalid(req, "INPUT0");

  ModelInferRequest truncated_prefix;
  truncated_prefix.set_model_name("strings");
  AddInput(truncated_prefix, "INPUT0", "BYTES", {1, 1});
  truncated_prefix.add_raw_input_contents(std::string("\x02\x00", 2));
  ExpectInvalid(truncated_prefix, "INPUT0");

  ModelInferRequest count;
  count.set_model_name("strings");
  AddInput(count, "INPUT0", "BYTES", {1, 2});
  count.add_raw_input_contents(SerializeBytes({"one"}));
  ExpectInvalid(count, "INPUT0");
}

// ---- bad requests: parameters --------------------------------------------------

TEST_F(GrpcInferErrorTest, ReservedAndMistypedParameters) {
  auto with = [](const std::string& key, auto set) {
    ModelInferRequest req = SimpleRequest(1);
    set((*req.mutable_parameters())[key]);
    return req;
  };
  using P = inference::InferParameter;
  ExpectInvalid(with("triton_something", [](P& p) { p.set_bool_param(true); }), "triton_");
  // The core's one wording (reserved_parameters.h), as over HTTP.
  ExpectInvalid(with("triton_enable_empty_final_response", [](P& p) { p.set_int64_param(1); }),
                "must be a bool, got int64 1");
  ExpectInvalid(with("sequence_id", [](P& p) { p.set_bool_param(true); }), "sequence_id");
  ExpectInvalid(with("sequence_start", [](P& p) { p.set_int64_param(1); }), "sequence_start");
  ExpectInvalid(with("sequence_end", [](P& p) { p.set_string_param("yes"); }), "sequence_end");
  ExpectInvalid(with("priority", [](P& p) { p.set_int64_param(-1); }), "priority");
  ExpectInvalid(with("priority", [](P& p) { p.set_string_param("high"); }), "priority");
  ExpectInvalid(with("timeout", [](P& p) { p.set_bool_param(true); }), "timeout");
  ExpectInvalid(with("timeout", [](P& p) { p.set_int64_param(-3); }), "timeout");
  ExpectInvalid(with("custom", [](P&) {}), "custom");  // no value set
  // Unsigned values are accepted as over HTTP (whose JSON integers above
  // INT64_MAX are unsigned): a uint64 sequence id, a uint64 custom parameter.
  ModelInferResponse r;
  ASSERT_GRPC_OK(Infer(with("sequence_id", [](P& p) { p.set_uint64_param(7); }), &r));
  ASSERT_GRPC_OK(Infer(with("custom", [](P& p) { p.set_uint64_param(3); }), &r));
}

}  // namespace
}  // namespace inferd::testing
