#include "core/sanitize.h"

#include <gtest/gtest.h>

#include "frontend/restricted_api.h"

namespace inferd {
namespace {

TEST(SanitizeTest, EscapesControlCharacters) {
  EXPECT_EQ(EscapeControl("a\nb\rc\td\x01\x7f\\"), "a\\nb\\rc\\td\\x01\\x7f\\\\");
  EXPECT_EQ(EscapeControl("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 unchanged
}

TEST(SanitizeTest, BoundsEchoedData) {
  EXPECT_EQ(Bounded("short"), "short");
  const std::string big(100000, 'x');
  const std::string b = Bounded(big);
  EXPECT_EQ(b, std::string(kMaxEchoBytes, 'x') + "...(100000 bytes)");
  EXPECT_EQ(Bounded("ab\ncd", 3), "ab\\n...(5 bytes)");
}

TEST(SanitizeTest, BoundsWholeMessages) {
  EXPECT_EQ(BoundMessage("m"), "m");
  EXPECT_LE(BoundMessage(std::string(1 << 20, 'y')).size(), kMaxErrorMessageBytes + 16);
}

TEST(SanitizeTest, RedactsPaths) {
  EXPECT_EQ(RedactPaths("cannot read /srv/models/m/config.pbtxt", {"/srv/models/"}),
            "cannot read <server path>/m/config.pbtxt");
  // The longer path first; empty and root paths are ignored.
  EXPECT_EQ(RedactPaths("/a/b/c and /a/x", {"/a", "/a/b", "", "/"}),
            "<server path>/c and <server path>/x");
}

TEST(RestrictedApiTest, ParsesAndChecks) {
  RestrictedApis r;
  ASSERT_TRUE(r.Add("http-restricted-api", "model-repository,statistics:Admin=v1").ok());
  ASSERT_TRUE(r.Add("http-restricted-api", "inference:k2=").ok());
  EXPECT_FALSE(r.Add("http-restricted-api", "statistics:x=y").ok());  // twice
  EXPECT_FALSE(r.Add("http-restricted-api", "nope:x=y").ok());
  EXPECT_FALSE(r.Add("http-restricted-api", "health").ok());
  EXPECT_FALSE(r.Add("http-restricted-api", "health:bad key=y").ok());
  auto none = [](std::string_view) { return std::optional<std::string_view>(); };
  auto with = [](std::string_view v) {
    return [v](std::string_view) { return std::optional<std::string_view>(v); };
  };
  EXPECT_TRUE(r.Check(ApiGroup::kHealth, none).ok());
  Status denied = r.Check(ApiGroup::kStatistics, none);
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("'Admin'"), std::string::npos);
  EXPECT_EQ(denied.message().find("v1"), std::string::npos);
  EXPECT_FALSE(r.Check(ApiGroup::kModelRepository, with("v2")).ok());
  EXPECT_FALSE(r.Check(ApiGroup::kModelRepository, with("v1x")).ok());
  EXPECT_TRUE(r.Check(ApiGroup::kModelRepository, with("v1")).ok());
  EXPECT_TRUE(r.Check(ApiGroup::kInference, with("")).ok());
  EXPECT_FALSE(r.Check(ApiGroup::kInference, none).ok());
}

TEST(RestrictedApiTest, GrpcKeysArePrefixedLowerCase) {
  RestrictedApis r(/*grpc=*/true);
  ASSERT_TRUE(r.Add("grpc-restricted-protocol", "health:Admin-Key=v").ok());
  EXPECT_EQ(r.Find(ApiGroup::kHealth)->key, "triton-grpc-protocol-admin-key");
}

TEST(RestrictedApiTest, HttpPathGroups) {
  EXPECT_EQ(HttpApiGroup("/v2"), ApiGroup::kMetadata);
  EXPECT_EQ(HttpApiGroup("/v2/health/ready"), ApiGroup::kHealth);
  EXPECT_EQ(HttpApiGroup("/v2/models/m"), ApiGroup::kMetadata);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/versions/2"), ApiGroup::kMetadata);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/ready"), ApiGroup::kHealth);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/versions/2/infer"), ApiGroup::kInference);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/generate"), ApiGroup::kInference);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/versions/2/generate_stream"), ApiGroup::kInference);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/config"), ApiGroup::kModelConfig);
  EXPECT_EQ(HttpApiGroup("/v2/models/stats"), ApiGroup::kStatistics);
  EXPECT_EQ(HttpApiGroup("/v2/models/m/stats"), ApiGroup::kStatistics);
  EXPECT_EQ(HttpApiGroup("/v2/repository/index"), ApiGroup::kModelRepository);
  EXPECT_EQ(HttpApiGroup("//v2//systemsharedmemory/status"), ApiGroup::kSharedMemory);
  EXPECT_EQ(HttpApiGroup("/v2/trace/setting"), ApiGroup::kTrace);
  EXPECT_EQ(HttpApiGroup("/v2/logging"), ApiGroup::kLogging);
  EXPECT_EQ(HttpApiGroup("/metrics"), std::nullopt);
}

}  // namespace
}  // namespace inferd
