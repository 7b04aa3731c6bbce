// The classification extension (PROTOCOL.md §6): top-k strings per entry.
#include "core/classification.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/bytes_tensor.h"

namespace inferd {
namespace {

template <typename T>
InferOutput Tensor(DataType type, Shape shape, std::vector<T> values) {
  InferOutput o;
  o.name = "out";
  o.datatype = type;
  o.shape = std::move(shape);
  o.buffer = OwnedBuffer(values.size() * sizeof(T));
  std::memcpy(o.buffer.data(), values.data(), values.size() * sizeof(T));
  return o;
}

std::vector<std::string> Strings(const InferOutput& o) {
  auto e = SplitBytesElements(o.buffer.data(), o.buffer.size());
  EXPECT_TRUE(e.ok());
  return std::vector<std::string>(e->begin(), e->end());
}

TEST(ClassificationTest, TheProtocolExample) {
  auto out = Classify(Tensor<float>(DataType::kFp32, {4}, {1.1f, 3.3f, 0.5f, 2.4f}), 2, false,
                      {"a", "b", "c", "d"});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->datatype, DataType::kBytes);
  EXPECT_EQ(out->shape, Shape{2});
  EXPECT_EQ(Strings(*out), (std::vector<std::string>{"3.300000:1:b", "2.400000:3:d"}));
}

TEST(ClassificationTest, BatchedEntriesAreClassifiedApartAndLabelsAreOptional) {
  auto out =
      Classify(Tensor<int8_t>(DataType::kInt8, {2, 3}, {1, 5, -3, 7, -1, 2}), 5, true, {"x", ""});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->shape, (Shape{2, 3}));  // k is capped at the entry size
  EXPECT_EQ(Strings(*out),
            (std::vector<std::string>{"5:1", "1:0:x", "-3:2", "7:0:x", "2:2", "-1:1"}));
}

TEST(ClassificationTest, UnorderedTypesAreRefused) {
  auto out = Classify(Tensor<uint16_t>(DataType::kFp16, {2}, {1, 2}), 1, false, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("unsupported type 'FP16'"), std::string::npos);
}

TEST(ClassificationTest, LabelsComeFromTheModelDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / "inferd_classification_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "labels.txt") << "zero\r\none\ntwo\n";
  ModelSpec spec;
  spec.outputs.emplace_back();
  spec.outputs[0].name = "out";
  spec.outputs[0].datatype = DataType::kFp32;
  spec.outputs[0].label_filename = "labels.txt";
  ASSERT_TRUE(LoadClassificationLabels(spec, dir.string()).ok());
  EXPECT_EQ(spec.outputs[0].labels, (std::vector<std::string>{"zero", "one", "two"}));
  spec.outputs[0].label_filename = "missing.txt";
  auto s = LoadClassificationLabels(spec, dir.string());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("missing.txt"), std::string::npos);
  std::filesystem::remove_all(dir);

  // Applied to a response: only the outputs asked for change.
  spec.outputs[0].labels = {"zero", "one", "two"};
  InferRequest req;
  req.outputs.emplace_back();
  req.outputs[0].name = "out";
  req.outputs[0].classification = 1;
  InferResponse resp;
  resp.outputs.push_back(Tensor<float>(DataType::kFp32, {3}, {0.1f, 0.7f, 0.2f}));
  ASSERT_TRUE(ApplyClassification(spec, req, resp).ok());
  EXPECT_EQ(Strings(resp.outputs[0]), std::vector<std::string>{"0.700000:1:one"});
}

}  // namespace
}  // namespace inferd
