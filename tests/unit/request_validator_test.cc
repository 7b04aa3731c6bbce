#include "core/request_validator.h"

#include <gtest/gtest.h>

#include <cstring>

namespace inferd {
namespace {

TensorSpec T(const std::string& name, DataType type, Shape dims) {
  TensorSpec t;
  t.name = name;
  t.datatype = type;
  t.dims = std::move(dims);
  return t;
}

ModelSpec Simple() {
  ModelSpec s;
  s.name = "simple";
  s.max_batch_size = 8;
  s.inputs = {T("INPUT0", DataType::kInt32, {16}), T("INPUT1", DataType::kInt32, {16})};
  s.outputs = {T("OUTPUT0", DataType::kInt32, {16}), T("OUTPUT1", DataType::kInt32, {16})};
  return s;
}

InferInput Input(InferRequest& r, const std::string& name, DataType t, Shape shape, size_t bytes) {
  InferInput in;
  in.name = name;
  in.datatype = t;
  in.shape = std::move(shape);
  char* p = r.Allocate(bytes);
  std::memset(p, 0, bytes);
  in.data = BufferView{p, bytes};
  return in;
}

struct Case {
  const char* what;
  std::function<void(InferRequest&)> mutate;
  const char* message_part;  // nullptr: valid
};

TEST(RequestValidatorTest, TableOfCases) {
  const std::vector<Case> cases = {
      {"valid batch 1", [](InferRequest&) {}, nullptr},
      {"valid batch 8",
       [](InferRequest& r) {
         r.inputs.clear();
         r.inputs.push_back(Input(r, "INPUT0", DataType::kInt32, {8, 16}, 512));
         r.inputs.push_back(Input(r, "INPUT1", DataType::kInt32, {8, 16}, 512));
       },
       nullptr},
      {"batch over max",
       [](InferRequest& r) {
         r.inputs.clear();
         r.inputs.push_back(Input(r, "INPUT0", DataType::kInt32, {9, 16}, 576));
         r.inputs.push_back(Input(r, "INPUT1", DataType::kInt32, {9, 16}, 576));
       },
       "batch-size must be <= 8"},
      {"unknown input", [](InferRequest& r) { r.inputs[1].name = "NOPE"; }, "'NOPE'"},
      {"duplicate input", [](InferRequest& r) { r.inputs[1].name = "INPUT0"; }, "more than once"},
      {"missing input", [](InferRequest& r) { r.inputs.pop_back(); }, "'INPUT1'"},
      {"wrong datatype", [](InferRequest& r) { r.inputs[0].datatype = DataType::kFp32; },
       "expects 'INT32'"},
      {"wrong shape",
       [](InferRequest& r) {
         r.inputs[0].shape = {1, 15};
       },
       "Expected [-1,16]"},
      {"negative dim",
       [](InferRequest& r) {
         r.inputs[0].shape = {-1, 16};
       },
       "negative"},
      {"short data", [](InferRequest& r) { r.inputs[0].data.byte_size = 60; }, "expected 64 bytes"},
      {"mismatched batch",
       [](InferRequest& r) {
         r.inputs[1].shape = {2, 16};
       },
       "batch size"},
      {"unknown output",
       [](InferRequest& r) {
         r.outputs.push_back({"OUT9", 0});
       },
       "'OUT9'"},
      {"duplicate output",
       [](InferRequest& r) {
         r.outputs.push_back({"OUTPUT0", 0});
         r.outputs.push_back({"OUTPUT0", 0});
       },
       "more than once"},
  };
  const ModelSpec spec = Simple();
  for (const auto& c : cases) {
    InferRequest r;
    r.inputs.push_back(Input(r, "INPUT0", DataType::kInt32, {1, 16}, 64));
    r.inputs.push_back(Input(r, "INPUT1", DataType::kInt32, {1, 16}, 64));
    c.mutate(r);
    Status s = ValidateRequest(spec, r);
    if (c.message_part == nullptr) {
      EXPECT_TRUE(s.ok()) << c.what << ": " << s.message();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.what;
      EXPECT_NE(s.message().find(c.message_part), std::string::npos)
          << c.what << ": " << s.message();
    }
  }
}

TEST(RequestValidatorTest, OverflowingShapeIsRejectedWithoutAllocation) {
  ModelSpec s;
  s.name = "identity";
  s.inputs = {T("INPUT0", DataType::kFp32, {-1, -1})};
  s.outputs = {T("OUTPUT0", DataType::kFp32, {-1, -1})};
  InferRequest r;
  InferInput in;
  in.name = "INPUT0";
  in.datatype = DataType::kFp32;
  in.shape = {1LL << 40, 1LL << 40};
  r.inputs.push_back(in);
  Status st = ValidateRequest(s, r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("overflows"), std::string::npos) << st.message();
}

TEST(RequestValidatorTest, BytesElementCountMustMatchShape) {
  ModelSpec s;
  s.name = "strings";
  s.inputs = {T("INPUT0", DataType::kBytes, {-1})};
  s.outputs = {T("OUTPUT0", DataType::kBytes, {-1})};
  InferRequest r;
  InferInput in;
  in.name = "INPUT0";
  in.datatype = DataType::kBytes;
  in.shape = {3};
  static const char two[] =
      "\x01\x00\x00\x00"
      "a"
      "\x01\x00\x00\x00"
      "b";
  in.data = BufferView{two, sizeof(two) - 1};
  r.inputs.push_back(in);
  Status st = ValidateRequest(s, r);
  EXPECT_NE(st.message().find("expected 3 BYTES elements"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace inferd
