#include "frontend/http/infer_codec.h"

#include <gtest/gtest.h>

#include <cstring>

namespace inferd::http {
namespace {

std::shared_ptr<const std::string> Body(const std::string& s) {
  return std::make_shared<const std::string>(s);
}

StatusOr<DecodedInfer> Decode(const std::string& body, std::optional<size_t> hlen = {}) {
  return DecodeInferRequest(Body(body), hlen, "m", -1, DecodeLimits{});
}

TEST(InferCodecTest, DecodesJsonDataFlatAndNested) {
  auto d = Decode(R"({"id":"7","inputs":[{"name":"X","shape":[2,2],"datatype":"INT32",
                     "data":[[1,2],[3,4]]}]})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  const auto& in = d->request->inputs[0];
  ASSERT_EQ(in.data.byte_size, 16u);
  int32_t v[4];
  std::memcpy(v, in.data.data, 16);
  EXPECT_EQ(v[3], 4);
  EXPECT_EQ(d->request->id, "7");
}

TEST(InferCodecTest, BinaryInputsAreViewsIntoTheBody) {
  const std::string json =
      R"({"inputs":[{"name":"A","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]})";
  auto body = Body(json + std::string(8, '\x01'));
  auto d = DecodeInferRequest(body, json.size(), "m", -1, DecodeLimits{});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->request->inputs[0].data.data, body->data() + json.size());
}

TEST(InferCodecTest, BadInputsNameTheProblem) {
  struct Case {
    std::string body;
    std::optional<size_t> hlen;
    const char* part;
  };
  const std::string bin =
      R"({"inputs":[{"name":"A","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]})";
  const std::vector<Case> cases = {
      {"{", {}, "failed to parse"},
      {"not json", {}, "failed to parse"},
      {"[]", {}, "must be an object"},
      {R"({"inputs":{}})", {}, "'inputs' must be an array"},
      {R"({"inputs":[{"name":"A","shape":[-1],"datatype":"FP32","data":[]}]})", {}, "non-negative"},
      {R"({"inputs":[{"name":"A","shape":[3],"datatype":"FP32","data":[1,2]}]})", {}, "expects 3"},
      {R"({"inputs":[{"name":"A","shape":[1],"datatype":"fp32","data":[1]}]})",
       {},
       "unknown datatype"},
      {R"({"inputs":[{"name":"A","shape":[1],"datatype":"FP16","data":[1]}]})", {}, "FP16"},
      {R"({"inputs":[{"name":"A","shape":[1],"datatype":"INT32","data":["x"]}]})",
       {},
       "an integer"},
      {R"({"inputs":[{"name":"A","shape":[1],"datatype":"BOOL","data":[1]}]})",
       {},
       "true or false"},
      {R"({"inputs":[{"name":"A","shape":[1],"datatype":"INT32"}]})", {}, "no field is set"},
      {R"({"inputs":[{"name":"A","shape":[4611686018427387904,4],"datatype":"INT32","data":[1]}]})",
       {},
       "overflows"},
      {R"({"parameters":{"triton_x":1},"inputs":[]})", {}, "reserved"},
      {R"({"parameters":{"k":[1]},"inputs":[]})", {}, "invalid type"},
      {bin + std::string(4, 'x'), bin.size(), "expecting 8 additional bytes"},
      {bin + std::string(9, 'x'), bin.size(), "unexpected additional input data"},
      {bin, bin.size() + 10, "larger than the request body"},
      {"{\"inputs\":[{\"name\":\"A\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":" +
           std::string(200, '[') + "1" + std::string(200, ']') + "}]}",
       {},
       "nested deeper"},
  };
  for (const auto& c : cases) {
    auto d = Decode(c.body, c.hlen);
    ASSERT_FALSE(d.ok()) << c.body;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(d.status().message().find(c.part), std::string::npos)
        << c.body << " -> " << d.status().message();
  }
}

TEST(InferCodecTest, EncodesJsonAndBinaryOutputs) {
  InferResponse r;
  r.model_name = "m";
  r.model_version = 3;
  r.id = "abc";
  auto& o = r.AddOutput("OUT", DataType::kFp32, {1}, 4);
  const float f = 1.1f;
  std::memcpy(o.buffer.data(), &f, 4);
  auto& b = r.AddOutput("BIN", DataType::kInt32, {1}, 4);
  std::memset(b.buffer.data(), 7, 4);
  OutputEncoding enc;
  enc.binary["BIN"] = true;
  auto e = EncodeInferResponse(r, enc);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->header_length.has_value());
  const std::string json = e->body.substr(0, *e->header_length);
  EXPECT_NE(json.find(R"("model_version":"3")"), std::string::npos) << json;
  EXPECT_NE(json.find("1.100000023841858"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("binary_data_size":4)"), std::string::npos) << json;
  EXPECT_EQ(e->body.size(), *e->header_length + 4);
}

TEST(InferCodecTest, Fp16MustBeBinary) {
  InferResponse r;
  r.AddOutput("H", DataType::kFp16, {1}, 2);
  EXPECT_FALSE(EncodeInferResponse(r, OutputEncoding{}).ok());
}

}  // namespace
}  // namespace inferd::http
