// The core rule for reserved request parameters: every reserved key against
// every neutral type, with the one wording of errors.
#include "core/reserved_parameters.h"

#include <gtest/gtest.h>

#include <functional>

namespace inferd {
namespace {

const ParameterValue kTrue = true;
const ParameterValue kInt = int64_t{5};
const ParameterValue kNegative = int64_t{-1};
const ParameterValue kUint = uint64_t{7};
const ParameterValue kDouble = 1.5;
const ParameterValue kString = std::string("s");
const ParameterValue kEmptyString = std::string();

struct Case {
  const char* key;
  ParameterValue value;
  // Empty: accepted, then `check` holds. Else: the whole error message.
  std::string error;
  std::function<bool(const InferRequest&)> check = [](const InferRequest&) { return true; };
};

std::string Err(const char* key, const char* expected, const char* given) {
  return std::string("parameter '") + key + "' must be " + expected + ", got " + given;
}

TEST(ReservedParametersTest, EveryKeyAgainstEveryType) {
  using R = const InferRequest&;
  const char* kUnsigned = "a non-negative integer";
  const char* kBool = "a bool";
  const char* kId = "an unsigned integer or a string";
  const std::vector<Case> cases = {
      {"sequence_id", kInt, "", [](R r) { return std::get<uint64_t>(r.correlation_id) == 5; }},
      {"sequence_id", kUint, "", [](R r) { return std::get<uint64_t>(r.correlation_id) == 7; }},
      // An int64 carries the bits of a uint64 id (Triton's C++ client).
      {"sequence_id", kNegative, "",
       [](R r) { return std::get<uint64_t>(r.correlation_id) == UINT64_MAX; }},
      {"sequence_id", int64_t{0}, "",
       [](R r) { return std::holds_alternative<std::monostate>(r.correlation_id); }},
      {"sequence_id", kString, "",
       [](R r) { return std::get<std::string>(r.correlation_id) == "s"; }},
      {"sequence_id", kEmptyString, "",
       [](R r) { return std::holds_alternative<std::monostate>(r.correlation_id); }},
      {"sequence_id", kTrue, Err("sequence_id", kId, "bool true")},
      {"sequence_id", kDouble, Err("sequence_id", kId, "double 1.5")},
      {"sequence_start", kTrue, "", [](R r) { return r.sequence_start; }},
      {"sequence_start", kInt, Err("sequence_start", kBool, "int64 5")},
      {"sequence_start", kString, Err("sequence_start", kBool, "string 's'")},
      {"sequence_end", kTrue, "", [](R r) { return r.sequence_end; }},
      {"sequence_end", kUint, Err("sequence_end", kBool, "uint64 7")},
      {"priority", kInt, "", [](R r) { return r.priority == 5; }},
      {"priority", kUint, "", [](R r) { return r.priority == 7; }},
      {"priority", kNegative, Err("priority", kUnsigned, "int64 -1")},
      {"priority", kTrue, Err("priority", kUnsigned, "bool true")},
      {"priority", kDouble, Err("priority", kUnsigned, "double 1.5")},
      {"priority", kString, Err("priority", kUnsigned, "string 's'")},
      {"timeout", kInt, "", [](R r) { return r.timeout_us == 5; }},
      {"timeout", kUint, "", [](R r) { return r.timeout_us == 7; }},
      {"timeout", kNegative, Err("timeout", kUnsigned, "int64 -1")},
      {"timeout", kString, Err("timeout", kUnsigned, "string 's'")},
      {"triton_enable_empty_final_response", kTrue, "",
       [](R r) { return r.enable_empty_final_response; }},
      {"triton_enable_empty_final_response", kInt,
       Err("triton_enable_empty_final_response", kBool, "int64 5")},
      {"binary_data_output", kTrue, ""},
      {"binary_data_output", kString, Err("binary_data_output", kBool, "string 's'")},
      {"headers", kString, ""},
      {"headers", kDouble, ""},
      {"triton_other", kTrue,
       "parameter 'triton_other': keys starting with 'triton_' are reserved for Triton usage "
       "and should not be specified"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + " = " + DescribeParameter(c.value));
    InferRequest r;
    r.parameters[c.key] = c.value;
    r.parameters["custom"] = int64_t{1};
    Status s = ApplyReservedParameters(r);
    if (!c.error.empty()) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(s.message(), c.error);
      continue;
    }
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(c.check(r));
    // The reserved key is consumed; the custom one stays for the model.
    EXPECT_EQ(r.parameters.count(c.key), 0u);
    EXPECT_EQ(r.parameters.size(), 1u);
  }
}

TEST(ReservedParametersTest, CustomParametersOfEveryTypeStay) {
  InferRequest r;
  r.parameters = {{"a", kTrue}, {"b", kInt}, {"c", kUint}, {"d", kDouble}, {"e", kString}};
  ASSERT_TRUE(ApplyReservedParameters(r).ok());
  EXPECT_EQ(r.parameters.size(), 5u);
  EXPECT_EQ(r.priority, 0u);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(r.correlation_id));
}

TEST(ReservedParametersTest, DescribesValuesBoundedAndEscaped) {
  EXPECT_EQ(DescribeParameter(kTrue), "bool true");
  EXPECT_EQ(DescribeParameter(kNegative), "int64 -1");
  EXPECT_EQ(DescribeParameter(ParameterValue(UINT64_MAX)), "uint64 18446744073709551615");
  EXPECT_EQ(DescribeParameter(ParameterValue(std::string("a\nb"))), "string 'a\\nb'");
  EXPECT_LT(DescribeParameter(ParameterValue(std::string(10000, 'x'))).size(), 300u);
  EXPECT_EQ(ParameterTypeError("load parameter", "config", "a string", kTrue).message(),
            "load parameter 'config' must be a string, got bool true");
}

}  // namespace
}  // namespace inferd
