#include "frontend/http/infer_codec.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/reserved_parameters.h"
#include "fake_device.h"

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

// The codec translates JSON values into the neutral types, keys untouched;
// the core applies the reserved keys (reserved_parameters_test.cc).
TEST(InferCodecTest, ParametersAreTranslatedThenAppliedByTheCore) {
  auto d = Decode(R"({"parameters":{"sequence_id":18446744073709551615,"priority":2,
      "timeout":1.5,"s":"x","b":true,"neg":-3,"headers":{"h":"v"},"binary_data_output":true,
      "triton_x":1},"inputs":[]})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  const Parameters& p = d->request->parameters;
  EXPECT_EQ(std::get<uint64_t>(p.at("sequence_id")), UINT64_MAX);
  EXPECT_EQ(std::get<int64_t>(p.at("priority")), 2);
  EXPECT_EQ(std::get<double>(p.at("timeout")), 1.5);
  EXPECT_EQ(std::get<std::string>(p.at("s")), "x");
  EXPECT_EQ(std::get<bool>(p.at("b")), true);
  EXPECT_EQ(std::get<int64_t>(p.at("neg")), -3);
  EXPECT_EQ(p.count("headers"), 0u);  // an object: HTTP's forwarding key, dropped
  EXPECT_EQ(std::get<int64_t>(p.at("triton_x")), 1);
  EXPECT_TRUE(d->encoding.binary_default);  // the codec reads binary_data_output

  // The core refuses what the codec let through: the mistyped timeout first
  // (keys in order), then the reserved prefix.
  Status s = ApplyReservedParameters(*d->request);
  EXPECT_EQ(s.message(), "parameter 'timeout' must be a non-negative integer, got double 1.5");
  d->request->parameters.erase("timeout");
  s = ApplyReservedParameters(*d->request);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'triton_x'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("reserved"), std::string::npos) << s.message();
  d->request->parameters.erase("triton_x");
  ASSERT_TRUE(ApplyReservedParameters(*d->request).ok());
  EXPECT_EQ(std::get<uint64_t>(d->request->correlation_id), UINT64_MAX);
  EXPECT_EQ(d->request->priority, 2u);
  EXPECT_EQ(d->request->parameters.size(), 3u);  // s, b, neg

  // A mistyped binary_data_output: the codec leaves the default, the core names it.
  auto bad = Decode(R"({"parameters":{"binary_data_output":"yes"},"inputs":[]})");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->encoding.binary_default);
  EXPECT_EQ(ApplyReservedParameters(*bad->request).message(),
            "parameter 'binary_data_output' must be a bool, got string 'yes'");

  // Values without a neutral type are the codec's error, naming the key.
  for (const char* body :
       {R"({"parameters":{"k":[1]},"inputs":[]})", R"({"parameters":{"k":null},"inputs":[]})",
        R"({"parameters":{"k":{"a":1}},"inputs":[]})"}) {
    auto e = Decode(body);
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_NE(e.status().message().find("parameter 'k' has invalid type"), std::string::npos)
        << e.status().message();
  }
  auto not_object = Decode(R"({"parameters":[1],"inputs":[]})");
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("must be an object"), std::string::npos);
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

// Inputs and outputs in CUDA shared-memory regions, over a fake device whose
// "GPU" memory is host memory: the codec finds the region by name, checks
// bounds, copies device -> host for inputs and host -> device for outputs.
namespace inferd::http {
namespace {

TEST(InferCodecCudaShmTest, InputsAndOutputsUseCudaRegions) {
  auto dev = std::make_shared<testing_fakes::FakeDevice>();
  CudaSharedMemoryManager cuda(dev);
  SharedMemoryManager shm;
  shm.set_cuda(&cuda);
  ASSERT_TRUE(cuda.Register("g", std::string(64, 'h'), 0, 64).ok());
  const float values[2] = {1.5f, -2.0f};
  auto region = cuda.Find("g");
  ASSERT_TRUE(region.ok());
  ASSERT_TRUE((*region)->CopyFromHost(8, reinterpret_cast<const char*>(values), 8).ok());

  auto d =
      DecodeInferRequest(Body(R"({"inputs":[{"name":"X","shape":[2],"datatype":"FP32","parameters":{
             "shared_memory_region":"g","shared_memory_byte_size":8,"shared_memory_offset":8}}],
             "outputs":[{"name":"Y","parameters":{"shared_memory_region":"g",
             "shared_memory_byte_size":8,"shared_memory_offset":32}}]})"),
                         std::nullopt, "m", -1, DecodeLimits{}, &shm);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const auto& in = d->request->inputs[0];
  ASSERT_EQ(in.data.byte_size, 8u);
  EXPECT_EQ(in.data.memory_type, MemoryType::kCpu);  // a host copy
  EXPECT_EQ(std::memcmp(in.data.data, values, 8), 0);

  InferResponse response;
  InferOutput out;
  out.name = "Y";
  out.datatype = DataType::kFp32;
  out.shape = {2};
  out.buffer = OwnedBuffer(8);
  const float y[2] = {3.0f, 4.0f};
  std::memcpy(out.buffer.data(), y, 8);
  response.outputs.push_back(std::move(out));
  auto encoded = EncodeInferResponse(response, d->encoding);
  ASSERT_TRUE(encoded.ok()) << encoded.status().message();
  float back[2] = {};
  ASSERT_TRUE((*region)->CopyToHost(32, 8, reinterpret_cast<char*>(back)).ok());
  EXPECT_EQ(back[0], 3.0f);
  EXPECT_EQ(back[1], 4.0f);
  EXPECT_EQ(encoded->body.find("\"data\""), std::string::npos);

  // Out of the region's bounds: a clear 400, naming the region.
  auto bad =
      DecodeInferRequest(Body(R"({"inputs":[{"name":"X","shape":[2],"datatype":"FP32","parameters":{
             "shared_memory_region":"g","shared_memory_byte_size":8,"shared_memory_offset":60}}]})"),
                         std::nullopt, "m", -1, DecodeLimits{}, &shm);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'g'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("out of bounds"), std::string::npos);
}

}  // namespace
}  // namespace inferd::http
