#include "core/bytes_tensor.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

TEST(BytesTensorTest, SplitsElements) {
  std::string buf;
  AppendBytesElement(buf, "ab");
  AppendBytesElement(buf, "");
  AppendBytesElement(buf, "xyz");
  auto parts = SplitBytesElements(buf.data(), buf.size());
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0], "ab");
  EXPECT_EQ((*parts)[1], "");
  EXPECT_EQ((*parts)[2], "xyz");
}

TEST(BytesTensorTest, LengthPastTheEndIsAnError) {
  std::string buf;
  AppendBytesElement(buf, "abc");
  buf.resize(buf.size() - 1);
  auto n = CountBytesElements(buf.data(), buf.size());
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("declares 3 bytes"), std::string::npos);
}

TEST(BytesTensorTest, TruncatedPrefixIsAnError) {
  std::string buf("\x01\x00", 2);
  EXPECT_FALSE(CountBytesElements(buf.data(), buf.size()).ok());
}

TEST(BytesTensorTest, HugeDeclaredLengthDoesNotOverflow) {
  std::string buf(
      "\xff\xff\xff\xff"
      "a",
      5);
  EXPECT_FALSE(CountBytesElements(buf.data(), buf.size()).ok());
}

}  // namespace
}  // namespace inferd
