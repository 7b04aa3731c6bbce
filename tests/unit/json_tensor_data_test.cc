// JSON tensor data at each datatype's boundaries (json_tensor_data.h), and
// the strict JSON of responses (non-finite floats, BYTES that are not
// UTF-8), through the codec's public functions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/reserved_parameters.h"
#include "frontend/http/infer_codec.h"

namespace inferd::http {
namespace {

StatusOr<DecodedInfer> DecodeOne(const std::string& datatype, const std::string& data,
                                 size_t count = 1) {
  const std::string body = R"({"inputs":[{"name":"X","shape":[)" + std::to_string(count) +
                           R"(],"datatype":")" + datatype + R"(","data":[)" + data + "]}]}";
  return DecodeInferRequest(std::make_shared<const std::string>(body), {}, "m", -1, DecodeLimits{});
}

template <typename T>
T Element(const DecodedInfer& d, size_t i = 0) {
  T v;
  std::memcpy(&v, d.request->inputs[0].data.data + i * sizeof(T), sizeof(T));
  return v;
}

struct Accepted {
  const char* datatype;
  const char* text;
};

// The extremes of each type are stored exactly.
TEST(JsonTensorDataTest, EachIntegerTypeTakesItsWholeRange) {
  auto check = [](const char* dt, const std::string& data, auto lo, auto hi) {
    auto d = DecodeOne(dt, data, 2);
    ASSERT_TRUE(d.ok()) << dt << ": " << d.status().message();
    using T = decltype(lo);
    EXPECT_EQ(Element<T>(*d, 0), lo) << dt;
    EXPECT_EQ(Element<T>(*d, 1), hi) << dt;
  };
  check("INT8", "-128,127", int8_t{-128}, int8_t{127});
  check("INT16", "-32768,32767", int16_t{-32768}, int16_t{32767});
  check("INT32", "-2147483648,2147483647", INT32_MIN, INT32_MAX);
  check("INT64", "-9223372036854775808,9223372036854775807", INT64_MIN, INT64_MAX);
  check("UINT8", "0,255", uint8_t{0}, uint8_t{255});
  check("UINT16", "0,65535", uint16_t{0}, uint16_t{65535});
  check("UINT32", "0,4294967295", uint32_t{0}, UINT32_MAX);
  check("UINT64", "0,18446744073709551615", uint64_t{0}, UINT64_MAX);
}

// One past each end is refused, naming the input, the flat index and the
// element as written, and the type's range.
TEST(JsonTensorDataTest, OutOfRangeIsRefusedNamingInputElementAndValue) {
  struct Case {
    const char* datatype;
    const char* bad;
    const char* range;
  };
  const Case cases[] = {
      {"INT8", "128", "-128 to 127"},
      {"INT8", "-129", "-128 to 127"},
      {"INT16", "32768", "-32768 to 32767"},
      {"INT16", "-32769", "-32768 to 32767"},
      {"INT32", "2147483648", "-2147483648 to 2147483647"},
      {"INT32", "-2147483649", "-2147483648 to 2147483647"},
      {"INT32", "1099511627776", "-2147483648 to 2147483647"},
      {"INT64", "9223372036854775808", "-9223372036854775808 to 9223372036854775807"},
      {"INT64", "-9223372036854775809", "-9223372036854775808 to 9223372036854775807"},
      {"UINT8", "256", "0 to 255"},
      {"UINT8", "-1", "0 to 255"},
      {"UINT16", "65536", "0 to 65535"},
      {"UINT32", "4294967296", "0 to 4294967295"},
      {"UINT64", "18446744073709551616", "0 to 18446744073709551615"},
      {"UINT64", "-1", "0 to 18446744073709551615"},
      {"INT32", "1e20", "-2147483648 to 2147483647"},
      {"INT32", "Infinity", "-2147483648 to 2147483647"},
      {"FP32", "1e39", "3.4028235e38"},
      {"FP32", "-1e39", "3.4028235e38"},
      {"FP32", "3.4028236e38", "3.4028235e38"},
  };
  for (const auto& c : cases) {
    // The bad value is element 2 of a nested [[0,0],[bad,0]].
    auto d = DecodeOne(c.datatype, std::string("[0,0],[") + c.bad + ",0]", 4);
    ASSERT_FALSE(d.ok()) << c.datatype << " " << c.bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    const std::string m = d.status().message();
    EXPECT_NE(m.find("input 'X': element 2 ("), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("is out of range for ") + c.datatype), std::string::npos) << m;
    EXPECT_NE(m.find(c.range), std::string::npos) << m;
  }
  auto d = DecodeOne("INT32", "0,0,0,1099511627776", 4);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(),
            "input 'X': element 3 (1099511627776) is out of range for INT32 "
            "(-2147483648 to 2147483647)");
}

TEST(JsonTensorDataTest, FractionsAndWrongKindsAreRefused) {
  struct Case {
    const char* datatype;
    const char* bad;
    const char* words;
  };
  const Case cases[] = {
      {"INT32", "1.5", "(1.5) of INT32 data must be an integer (written without a fraction"},
      {"INT32", "1.0", "(1.0) of INT32 data must be an integer"},
      {"UINT8", "2e0", "of UINT8 data must be an integer (written without"},
      {"INT64", "-0.5", "of INT64 data must be an integer"},
      {"INT32", "NaN", "(NaN) of INT32 data must be an integer"},
      {"INT32", "true", "(true) of INT32 data must be an integer"},
      {"INT32", "\"7\"", "(\"7\") of INT32 data must be an integer"},
      {"UINT16", "false", "(false) of UINT16 data must be a non-negative integer"},
      {"BOOL", "1", "(1) of BOOL data must be true or false"},
      {"BOOL", "0", "(0) of BOOL data must be true or false"},
      {"BOOL", "\"true\"", "of BOOL data must be true or false"},
      {"FP32", "true", "(true) of FP32 data must be a number"},
      {"FP64", "\"1.5\"", "of FP64 data must be a number (or \"NaN\""},
      {"FP32", "\"nan\"", "of FP32 data must be a number"},
      {"FP64", "null", "(null) of FP64 data must be a number"},
      {"INT8", "{}", "({}) of INT8 data must be an integer"},
  };
  for (const auto& c : cases) {
    const std::string first = std::string(c.datatype) == "BOOL" ? "true," : "0,";
    auto d = DecodeOne(c.datatype, first + c.bad, 2);
    ASSERT_FALSE(d.ok()) << c.datatype << " " << c.bad;
    const std::string m = d.status().message();
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.find("input 'X': element 1 ("), std::string::npos) << m;
    EXPECT_NE(m.find(c.words), std::string::npos) << m;
  }
}

TEST(JsonTensorDataTest, FloatsRoundAndTakeNonFiniteSpellings) {
  auto d = DecodeOne("FP32", "1e-50,0.1,3.4028235e38,-3.4028234663852886e38,16777217", 5);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(Element<float>(*d, 0), 0.0f);  // rounds to zero: accepted
  EXPECT_EQ(Element<float>(*d, 1), 0.1f);
  EXPECT_EQ(Element<float>(*d, 2), std::numeric_limits<float>::max());  // rounds to FLT_MAX
  EXPECT_EQ(Element<float>(*d, 3), -std::numeric_limits<float>::max());
  EXPECT_EQ(Element<float>(*d, 4), 16777216.0f);  // loses precision: accepted

  for (const char* dt : {"FP32", "FP64"}) {
    auto n = DecodeOne(dt, R"(NaN,Infinity,-Infinity,"NaN","Infinity","-Infinity")", 6);
    ASSERT_TRUE(n.ok()) << dt << ": " << n.status().message();
    for (size_t i = 0; i < 6; i += 3) {
      const bool fp32 = std::string(dt) == "FP32";
      const double nan = fp32 ? Element<float>(*n, i) : Element<double>(*n, i);
      const double inf = fp32 ? Element<float>(*n, i + 1) : Element<double>(*n, i + 1);
      const double ninf = fp32 ? Element<float>(*n, i + 2) : Element<double>(*n, i + 2);
      EXPECT_TRUE(std::isnan(nan)) << dt << " " << i;
      EXPECT_EQ(inf, std::numeric_limits<double>::infinity()) << dt << " " << i;
      EXPECT_EQ(ninf, -std::numeric_limits<double>::infinity()) << dt << " " << i;
    }
  }
  auto big = DecodeOne("FP64", "1e308,-1e308,5e-324", 3);
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(Element<double>(*big, 0), 1e308);
}

TEST(JsonTensorDataTest, RequestJsonMustBeUtf8) {
  for (const std::string& body :
       {std::string(R"({"id":"a)") + "\xff" + R"(","inputs":[]})",
        std::string(R"({"inputs":[{"name":"X","shape":[1],"datatype":"BYTES","data":[")") +
            "\xc3\x28" + R"("]}]})"}) {
    auto d =
        DecodeInferRequest(std::make_shared<const std::string>(body), {}, "m", -1, DecodeLimits{});
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.status().message().find("Invalid encoding"), std::string::npos)
        << d.status().message();
  }
  auto ok = DecodeOne("BYTES", "\"caf\xc3\xa9\",\"\\u00e9\"", 2);
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

// JSON writes sequence ids unsigned: a negative one is refused by the codec
// in the core's words; fractional ones and the typed parameters' negatives
// are refused by the core (reserved_parameters_test.cc).
TEST(JsonTensorDataTest, NegativeOrFractionalSequenceIdIsRefused) {
  auto decode = [](const std::string& params) {
    const std::string body = R"({"parameters":)" + params + R"(,"inputs":[]})";
    return DecodeInferRequest(std::make_shared<const std::string>(body), {}, "m", -1,
                              DecodeLimits{});
  };
  auto neg = decode(R"({"sequence_id":-1})");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().message(),
            "parameter 'sequence_id' must be an unsigned integer or a string, got int64 -1");
  struct Case {
    const char* params;
    const char* message;
  };
  const Case cases[] = {
      {R"({"sequence_id":1.5})",
       "parameter 'sequence_id' must be an unsigned integer or a string, got double 1.5"},
      {R"({"sequence_id":18446744073709551616})",
       "parameter 'sequence_id' must be an unsigned integer or a string, got double "
       "1.8446744073709552e+19"},
      {R"({"priority":-1})", "parameter 'priority' must be a non-negative integer, got int64 -1"},
      {R"({"priority":2.5})",
       "parameter 'priority' must be a non-negative integer, got double 2.5"},
      {R"({"timeout":-5})", "parameter 'timeout' must be a non-negative integer, got int64 -5"},
      {R"({"timeout":18446744073709551616})",
       "parameter 'timeout' must be a non-negative integer, got double 1.8446744073709552e+19"},
  };
  for (const auto& c : cases) {
    auto d = decode(c.params);
    ASSERT_TRUE(d.ok()) << c.params << ": " << d.status().message();
    EXPECT_EQ(ApplyReservedParameters(*d->request).message(), c.message) << c.params;
  }
  auto max = decode(R"({"sequence_id":18446744073709551615,"timeout":18446744073709551615})");
  ASSERT_TRUE(max.ok());
  ASSERT_TRUE(ApplyReservedParameters(*max->request).ok());
  EXPECT_EQ(std::get<uint64_t>(max->request->correlation_id), UINT64_MAX);
  EXPECT_EQ(max->request->timeout_us, UINT64_MAX);
}

template <typename T>
InferResponse NonFiniteResponse(DataType t) {
  InferResponse r;
  r.model_name = "m";
  auto& o = r.AddOutput("OUT", t, {4}, 4 * sizeof(T));
  const T v[4] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                  -std::numeric_limits<T>::infinity(), T(1.5)};
  std::memcpy(o.buffer.data(), v, sizeof v);
  return r;
}

TEST(JsonTensorDataTest, NonFiniteOutputsAreJsonStrings) {
  for (const auto& r :
       {NonFiniteResponse<float>(DataType::kFp32), NonFiniteResponse<double>(DataType::kFp64)}) {
    auto e = EncodeInferResponse(r, OutputEncoding{});
    ASSERT_TRUE(e.ok()) << e.status().message();
    EXPECT_NE(e->body.find(R"("data":["NaN","Infinity","-Infinity",1.5])"), std::string::npos)
        << e->body;
    // Binary output carries the bits unchanged.
    OutputEncoding bin;
    bin.binary_default = true;
    auto b = EncodeInferResponse(r, bin);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->body.substr(*b->header_length),
              std::string(r.outputs[0].buffer.data(), r.outputs[0].buffer.size()));
  }
  InferResponse p;
  p.model_name = "m";
  p.parameters["score"] = std::numeric_limits<double>::infinity();
  auto e = EncodeInferResponse(p, OutputEncoding{});
  ASSERT_TRUE(e.ok());
  EXPECT_NE(e->body.find(R"("parameters":{"score":"Infinity"})"), std::string::npos) << e->body;
}

TEST(JsonTensorDataTest, BytesOutputsThatAreNotUtf8MustBeBinary) {
  InferResponse r;
  r.model_name = "m";
  const std::string elements = std::string("\x02\0\0\0ok", 6) + std::string("\x01\0\0\0\xff", 5);
  auto& o = r.AddOutput("TEXT", DataType::kBytes, {2}, elements.size());
  std::memcpy(o.buffer.data(), elements.data(), elements.size());
  auto e = EncodeInferResponse(r, OutputEncoding{});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("output 'TEXT': element 1 is not valid UTF-8"),
            std::string::npos)
      << e.status().message();
  EXPECT_NE(e.status().message().find("binary_data"), std::string::npos);
  OutputEncoding bin;
  bin.binary["TEXT"] = true;
  EXPECT_TRUE(EncodeInferResponse(r, bin).ok());

  // Names and parameter strings that are not UTF-8 (from a backend) are
  // escaped as text: the response stays strict JSON.
  InferResponse p;
  p.model_name = "m";
  p.parameters["k\xfe"] = std::string("v\xfe");
  auto escaped = EncodeInferResponse(p, OutputEncoding{});
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_NE(escaped->body.find(R"("parameters":{"k\\xfe":"v\\xfe"})"), std::string::npos)
      << escaped->body;
}

}  // namespace
}  // namespace inferd::http
