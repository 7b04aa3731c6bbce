#include "frontend/http/compression.h"

#include <gtest/gtest.h>

namespace inferd::http {
namespace {

TEST(CompressionTest, RoundTripsBothWrappers) {
  const std::string data(10000, 'q');
  for (Encoding e : {Encoding::kGzip, Encoding::kDeflate}) {
    auto z = Compress(data, e);
    ASSERT_TRUE(z.ok());
    auto back = Inflate(*z, 1 << 20);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, data);
  }
}

TEST(CompressionTest, RefusesOutputPastTheLimit) {
  auto z = Compress(std::string(1 << 20, 'a'), Encoding::kGzip);
  ASSERT_TRUE(z.ok());
  auto back = Inflate(*z, 1000);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("--http-max-input-size"), std::string::npos);
}

TEST(CompressionTest, CorruptInputIsAnError) { EXPECT_FALSE(Inflate("garbage", 100).ok()); }

TEST(CompressionTest, ChoosesByWeight) {
  EXPECT_EQ(ChooseEncoding("gzip"), Encoding::kGzip);
  EXPECT_EQ(ChooseEncoding("deflate, gzip"), Encoding::kDeflate);
  EXPECT_EQ(ChooseEncoding("deflate;q=0.5, gzip;q=0.9"), Encoding::kGzip);
  EXPECT_EQ(ChooseEncoding("br"), Encoding::kIdentity);
  EXPECT_EQ(ChooseEncoding(""), Encoding::kIdentity);
}

}  // namespace
}  // namespace inferd::http
