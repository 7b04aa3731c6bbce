// The generate extension's codec: JSON keys onto inputs and parameters,
// wildcard shapes, byte budget, error texts; the response object.
#include "frontend/http/generate_codec.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/bytes_tensor.h"

namespace inferd::http {
namespace {

ModelSpec Spec(int64_t max_batch = 0) {
  ModelSpec s;
  s.name = "m";
  s.max_batch_size = max_batch;
  auto input = [&s](std::string name, DataType type, Shape dims) {
    TensorSpec t;
    t.name = std::move(name);
    t.datatype = type;
    t.dims = std::move(dims);
    s.inputs.push_back(std::move(t));
  };
  input("TEXT", DataType::kBytes, {-1});
  input("N", DataType::kInt32, {2, -1});
  input("FLAG", DataType::kBool, {1});
  return s;
}

StatusOr<std::unique_ptr<InferRequest>> Decode(std::string_view body,
                                               const ModelSpec& spec = Spec(),
                                               GenerateLimits limits = {}) {
  return DecodeGenerateRequest(body, spec, "m", -1, limits);
}

std::string Err(std::string_view body, const ModelSpec& spec = Spec(), GenerateLimits limits = {}) {
  auto r = Decode(body, spec, limits);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(GenerateCodecTest, KeysBecomeInputsOrTypedParameters) {
  auto r = Decode(R"({"TEXT":"hello","N":[1,2,3,4],"id":"42","temp":0.5,"k":3,"s":"x","b":true,)"
                  R"("parameters":{"FLAG":true,"max_tokens":7}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const InferRequest& req = **r;
  EXPECT_EQ(req.model_name, "m");
  EXPECT_EQ(req.id, "42");
  ASSERT_EQ(req.inputs.size(), 3u);
  const InferInput* text = req.FindInput("TEXT");
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(text->shape, (Shape{1}));
  EXPECT_EQ(std::string(text->data.data, text->data.byte_size), std::string("\x05\0\0\0hello", 9));
  const InferInput* n = req.FindInput("N");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->shape, (Shape{2, 2}));
  int32_t v[4];
  std::memcpy(v, n->data.data, 16);
  EXPECT_EQ(v[3], 4);
  EXPECT_EQ(req.FindInput("FLAG")->shape, (Shape{1}));
  EXPECT_EQ(std::get<std::string>(req.parameters.at("id")), "42");
  EXPECT_EQ(std::get<double>(req.parameters.at("temp")), 0.5);
  EXPECT_EQ(std::get<int64_t>(req.parameters.at("k")), 3);
  EXPECT_EQ(std::get<std::string>(req.parameters.at("s")), "x");
  EXPECT_EQ(std::get<bool>(req.parameters.at("b")), true);
  EXPECT_EQ(std::get<int64_t>(req.parameters.at("max_tokens")), 7);
  EXPECT_EQ(req.parameters.count("parameters"), 0u);
}

TEST(GenerateCodecTest, BatchedModelsGetALeadingOne) {
  auto r = Decode(R"({"TEXT":"hello"})", Spec(8));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->inputs[0].shape, (Shape{1, 1}));
  r = Decode(R"({"TEXT":["a","b","c"]})", Spec(8));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->inputs[0].shape, (Shape{1, 3}));
}

TEST(GenerateCodecTest, WildcardFilling) {
  EXPECT_EQ(*FillGenerateShape({-1}, 3), (Shape{3}));
  EXPECT_EQ(*FillGenerateShape({-1, -1}, 3), (Shape{1, 3}));
  EXPECT_EQ(*FillGenerateShape({-1, 2}, 6), (Shape{3, 2}));
  EXPECT_EQ(*FillGenerateShape({2, 3}, 6), (Shape{2, 3}));
  EXPECT_EQ(*FillGenerateShape({}, 1), (Shape{}));
  EXPECT_EQ(*FillGenerateShape({-1}, 0), (Shape{0}));
  EXPECT_FALSE(FillGenerateShape({2, 3}, 5));
  EXPECT_FALSE(FillGenerateShape({-1, 2}, 3));
  EXPECT_FALSE(FillGenerateShape({1}, 2));
  EXPECT_FALSE(FillGenerateShape({}, 2));
}

TEST(GenerateCodecTest, EmptyBodyIsAnEmptyObject) {
  auto r = Decode("");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->inputs.empty());
}

TEST(GenerateCodecTest, ErrorTexts) {
  EXPECT_EQ(Err(R"({"id":5})"), "Unable to parse 'id': expected a string");
  EXPECT_EQ(Err(R"({"parameters":[1]})"), "Expected JSON object for keyword: 'parameters'");
  EXPECT_EQ(Err(R"({"x":[1]})"),
            "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'.");
  EXPECT_EQ(Err(R"({"x":null})"),
            "parameter 'x' has invalid type. It should be either 'int', 'bool', or 'string'.");
  EXPECT_EQ(Err(R"({"TEXT":5})"), "attempt to access JSON non-string as string");
  EXPECT_EQ(Err(R"({"FLAG":1})"), "attempt to access JSON non-boolean as boolean");
  EXPECT_EQ(Err(R"({"N":["a","b"]})"),
            "attempt to access JSON non-signed-integer as signed-integer");
  EXPECT_EQ(Err(R"({"N":[1,2,3]})"),
            "The schema can not convert input 'N' to tensor with proper shape");
  EXPECT_EQ(Err(R"({"TEXT":"a","TEXT":"b"})"), "input 'TEXT' already exists in request");
  EXPECT_EQ(Err(R"({"TEXT":"a","parameters":{"TEXT":"b"}})"),
            "input 'TEXT' already exists in request");
  EXPECT_NE(Err(R"({"TEXT":[["a"]]})").find("flat array"), std::string::npos);
  EXPECT_NE(Err("{").find("failed to parse the request JSON"), std::string::npos);
  EXPECT_EQ(Err("[1]"), "the request JSON must be an object");
  ModelSpec with_params = Spec();
  with_params.inputs.push_back(with_params.inputs[0]);
  with_params.inputs.back().name = "parameters";
  EXPECT_EQ(Err(R"({"parameters":{}})", with_params),
            "Keyword 'parameters' for nested schema also given as input tensor name");
  EXPECT_NE(Err(R"({"N":[1,2.5]})").find("input 'N'"), std::string::npos);
}

TEST(GenerateCodecTest, ByteBudget) {
  GenerateLimits limits;
  limits.max_input_bytes = 20;
  EXPECT_TRUE(Decode(R"({"N":[1,2,3,4]})", Spec(), limits).ok());  // 16 bytes
  EXPECT_EQ(Err(R"({"N":[1,2,3,4],"TEXT":"hello"})", Spec(), limits),
            "request size of 25 bytes with input 'TEXT' of size 9 bytes exceeds the maximum "
            "allowed input size of 20. Use --http-max-input-size to increase the limit.");
}

TEST(GenerateCodecTest, ResponseIsFlatAndSorted) {
  InferResponse r;
  r.model_name = "m";
  r.model_version = 3;
  r.id = "42";
  r.parameters["zeta"] = int64_t{-1};
  r.parameters["alpha"] = true;
  r.parameters["model_name"] = std::string("clash");  // a reserved key wins
  std::string bytes;
  AppendBytesElement(bytes, "hello world");
  auto& text = r.AddOutput("TEXT", DataType::kBytes, {1}, bytes.size());
  std::memcpy(text.buffer.data(), bytes.data(), bytes.size());
  auto& many = r.AddOutput("OUT", DataType::kInt32, {1, 2}, 8);
  int32_t v[2] = {7, 8};
  std::memcpy(many.buffer.data(), v, 8);
  auto& one = r.AddOutput("F", DataType::kFp32, {1, 1}, 4);
  float f = 1.5f;
  std::memcpy(one.buffer.data(), &f, 4);
  auto json = EncodeGenerateResponse(r);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, R"({"F":1.5,"OUT":[7,8],"TEXT":"hello world","alpha":true,"id":"42",)"
                   R"("model_name":"m","model_version":"3","zeta":-1})");
  r.id.clear();
  r.parameters.clear();
  r.outputs.clear();
  EXPECT_EQ(*EncodeGenerateResponse(r), R"({"model_name":"m","model_version":"3"})");
}

TEST(GenerateCodecTest, ResponseRefusesWhatJsonCannotCarry) {
  InferResponse r;
  r.model_name = "m";
  r.AddOutput("H", DataType::kFp16, {1}, 2);
  EXPECT_FALSE(EncodeGenerateResponse(r).ok());
}

TEST(GenerateCodecTest, SseEvent) { EXPECT_EQ(SseEvent("{}"), "data: {}\n\n"); }

}  // namespace
}  // namespace inferd::http
