#include "core/shape.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/datatype.h"

namespace inferd {
namespace {

TEST(ShapeTest, ElementCountOfOrdinaryShapes) {
  EXPECT_EQ(ElementCount(Shape{}), 1);
  EXPECT_EQ(ElementCount(Shape{1, 16}), 16);
  EXPECT_EQ(ElementCount(Shape{2, 0, 5}), 0);
}

TEST(ShapeTest, ElementCountRejectsNegativeAndOverflow) {
  EXPECT_FALSE(ElementCount(Shape{-1, 4}));
  EXPECT_FALSE(ElementCount(Shape{1LL << 32, 1LL << 32}));
  EXPECT_FALSE(ElementCount(Shape{std::numeric_limits<int64_t>::max(), 2}));
}

TEST(ShapeTest, ByteSizeChecksOverflowAndVariableTypes) {
  EXPECT_EQ(ByteSize(DataType::kFp32, Shape{2, 3}), 24u);
  EXPECT_EQ(ByteSize(DataType::kBool, Shape{7}), 7u);
  EXPECT_FALSE(ByteSize(DataType::kBytes, Shape{2}));
  // 2^62 elements fit int64 but 8 bytes each overflow uint64.
  EXPECT_FALSE(ByteSize(DataType::kFp64, Shape{1LL << 31, 1LL << 31}));
  EXPECT_EQ(ByteSize(DataType::kInt8, Shape{1LL << 31, 1LL << 31}), uint64_t{1} << 62);
}

TEST(ShapeTest, WildcardMatching) {
  EXPECT_TRUE(ShapeMatches(Shape{3, 4}, Shape{-1, 4}));
  EXPECT_FALSE(ShapeMatches(Shape{3, 5}, Shape{-1, 4}));
  EXPECT_FALSE(ShapeMatches(Shape{3}, Shape{3, 1}));
}

TEST(DataTypeTest, ProtocolNamesRoundTripExactly) {
  for (int i = 1; i <= 14; ++i) {
    auto t = static_cast<DataType>(i);
    EXPECT_EQ(DataTypeFromProtocol(DataTypeToProtocol(t)), t);
  }
  EXPECT_EQ(DataTypeFromProtocol("fp32"), DataType::kInvalid);
  EXPECT_EQ(DataTypeFromProtocol("STRING"), DataType::kInvalid);
  EXPECT_EQ(DataTypeToConfigName(DataType::kBytes), "TYPE_STRING");
  EXPECT_EQ(DataTypeByteSize(DataType::kBf16), 2u);
}

}  // namespace
}  // namespace inferd
