// Unit tests of infer-batcher's HTTP conversions (src/batcher/http_convert.h):
// a body decoded by inferd's HTTP codec becomes the gRPC request inferd's
// gRPC front end would get, and a gRPC answer encodes to inferd's HTTP body.
#include <gtest/gtest.h>

#include <cstring>

#include "batcher/http_convert.h"
#include "frontend/http/infer_codec.h"

namespace inferd::batcher {
namespace {

TEST(ToModelInferRequest, CarriesInputsOutputsIdAndParameters) {
  auto body = std::make_shared<const std::string>(
      R"({"id":"r1","parameters":{"priority":2,"binary_data_output":true},)"
      R"("inputs":[{"name":"IN","datatype":"INT32","shape":[1,2],"data":[5,6]}],)"
      R"("outputs":[{"name":"OUT","parameters":{"classification":3}}]})");
  auto decoded = http::DecodeInferRequest(body, std::nullopt, "m", -1, http::DecodeLimits{});
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  inference::ModelInferRequest r = ToModelInferRequest(*decoded->request, "3");
  EXPECT_EQ(r.model_name(), "m");
  EXPECT_EQ(r.model_version(), "3");
  EXPECT_EQ(r.id(), "r1");
  ASSERT_EQ(r.parameters().count("priority"), 1u);
  EXPECT_EQ(r.parameters().count("binary_data_output"), 0u);
  ASSERT_EQ(r.inputs_size(), 1);
  EXPECT_EQ(r.inputs(0).datatype(), "INT32");
  ASSERT_EQ(r.inputs(0).shape_size(), 2);
  EXPECT_EQ(r.inputs(0).shape(1), 2);
  int32_t v[2];
  ASSERT_EQ(r.raw_input_contents(0).size(), sizeof v);
  std::memcpy(v, r.raw_input_contents(0).data(), sizeof v);
  EXPECT_EQ(v[0], 5);
  EXPECT_EQ(v[1], 6);
  ASSERT_EQ(r.outputs_size(), 1);
  EXPECT_EQ(r.outputs(0).parameters().at("classification").int64_param(), 3);
}

inference::ModelInferResponse Answer() {
  inference::ModelInferResponse a;
  a.set_model_name("m");
  a.set_model_version("1");
  a.set_id("r1");
  auto* out = a.add_outputs();
  out->set_name("OUT");
  out->set_datatype("INT32");
  out->add_shape(1);
  out->add_shape(2);
  int32_t v[2] = {7, -8};
  a.add_raw_output_contents(std::string(reinterpret_cast<const char*>(v), sizeof v));
  return a;
}

TEST(FromModelInferResponse, EncodesAsInferdsHttpFrontEndWould) {
  auto core = FromModelInferResponse(std::make_shared<inference::ModelInferResponse>(Answer()));
  ASSERT_TRUE(core.ok()) << core.status().message();
  EXPECT_EQ((*core)->model_version, 1);
  auto json = http::EncodeInferResponse(**core, http::OutputEncoding{});
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_FALSE(json->header_length.has_value());
  EXPECT_EQ(json->body,
            R"({"id":"r1","model_name":"m","model_version":"1","outputs":[{"name":"OUT",)"
            R"("datatype":"INT32","shape":[1,2],"data":[7,-8]}]})");
  http::OutputEncoding binary;
  binary.binary_default = true;
  auto blob = http::EncodeInferResponse(**core, binary);
  ASSERT_TRUE(blob.ok());
  ASSERT_TRUE(blob->header_length.has_value());
  EXPECT_EQ(blob->body.size(), *blob->header_length + 8);
}

TEST(FromModelInferResponse, RefusesAnswersItCannotRead) {
  inference::ModelInferResponse a = Answer();
  a.mutable_outputs(0)->set_datatype("INT33");
  auto bad = FromModelInferResponse(std::make_shared<inference::ModelInferResponse>(a));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("OUT"), std::string::npos);
  a = Answer();
  a.clear_raw_output_contents();
  EXPECT_FALSE(FromModelInferResponse(std::make_shared<inference::ModelInferResponse>(a)).ok());
  a = Answer();
  a.set_model_version("x");
  EXPECT_FALSE(FromModelInferResponse(std::make_shared<inference::ModelInferResponse>(a)).ok());
}

}  // namespace
}  // namespace inferd::batcher
