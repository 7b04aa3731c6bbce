// The HTTP router: patterns, captures, percent-decoding, 404 vs 405.
#include "frontend/http/http_router.h"

#include <gtest/gtest.h>

namespace inferd::http {
namespace {

using Result = RouteMatch::Result;

enum Route : size_t {
  kServer,
  kAllStats,
  kInfer,
  kMetadata,
  kReady,
  kIndex,
  kLoad,
  kShmStatus,
  kShmRegister,
};

HttpRouter Api() {
  HttpRouter r;
  const struct {
    const char* method;
    const char* pattern;
    Route route;
  } table[] = {
      {"GET", "/v2", kServer},
      {"GET", "/v2/models/stats", kAllStats},
      {"POST", "/v2/models/{model}[/versions/{version}]/infer", kInfer},
      {"GET", "/v2/models/{model}[/versions/{version}]", kMetadata},
      {"GET", "/v2/models/{model}[/versions/{version}]/ready", kReady},
      {"POST", "/v2/repository[/{repo}]/index", kIndex},
      {"POST", "/v2/repository[/{repo}]/models/{model}/load", kLoad},
      {"GET", "/v2/systemsharedmemory[/region/{region}]/status", kShmStatus},
      {"POST", "/v2/systemsharedmemory[/region/{region}]/register", kShmRegister},
  };
  for (const auto& t : table) EXPECT_TRUE(r.Add(t.method, t.pattern, t.route).ok()) << t.pattern;
  return r;
}

TEST(HttpRouterTest, MatchesRoutesAndCaptures) {
  const HttpRouter r = Api();
  auto m = r.Match("GET", "/v2");
  EXPECT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kServer);

  m = r.Match("POST", "/v2/models/simple/infer");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kInfer);
  EXPECT_EQ(m.params.model, "simple");
  EXPECT_EQ(m.params.version, "");  // the optional group absent

  m = r.Match("POST", "/v2/models/simple/versions/3/infer");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kInfer);
  EXPECT_EQ(m.params.model, "simple");
  EXPECT_EQ(m.params.version, "3");

  m = r.Match("GET", "/v2/models/simple/versions/2");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kMetadata);
  EXPECT_EQ(m.params.version, "2");

  m = r.Match("POST", "/v2/repository/models/m1/load");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kLoad);
  EXPECT_EQ(m.params.repo, "");
  EXPECT_EQ(m.params.model, "m1");

  m = r.Match("POST", "/v2/repository/r1/models/m1/load");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.params.repo, "r1");

  m = r.Match("GET", "/v2/systemsharedmemory/region/in%20put/status");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kShmStatus);
  EXPECT_EQ(m.params.region, "in put");
  EXPECT_EQ(r.Match("GET", "/v2/systemsharedmemory/status").params.region, "");
}

TEST(HttpRouterTest, LiteralsWinInTableOrder) {
  const HttpRouter r = Api();
  // /v2/models/stats is listed before /v2/models/{model}: the literal wins.
  EXPECT_EQ(r.Match("GET", "/v2/models/stats").route, kAllStats);
  // A model may still be called "ready": /v2/models/ready is its metadata.
  auto m = r.Match("GET", "/v2/models/ready");
  EXPECT_EQ(m.route, kMetadata);
  EXPECT_EQ(m.params.model, "ready");
  m = r.Match("GET", "/v2/models/versions/ready");
  EXPECT_EQ(m.route, kReady);
  EXPECT_EQ(m.params.model, "versions");
}

TEST(HttpRouterTest, CapturesArePercentDecodedLiteralsAreNot) {
  const HttpRouter r = Api();
  auto m = r.Match("GET", "/v2/models/..%2Fx/ready");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.params.model, "../x");  // the name rule (ControlPlane) refuses it later
  m = r.Match("GET", "/v2/models/%41b%63");
  EXPECT_EQ(m.params.model, "Abc");
  // An escaped literal is not the literal.
  EXPECT_EQ(r.Match("GET", "/v2/%6dodels/simple").result, Result::kNotFound);

  for (const char* bad : {"/v2/models/%zz/ready", "/v2/models/a%2/ready", "/v2/models/a%/ready"}) {
    m = r.Match("GET", bad);
    EXPECT_EQ(m.result, Result::kBadPath) << bad;
    EXPECT_EQ(m.error.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(m.error.message().find("percent-escape"), std::string::npos) << m.error.message();
  }
}

TEST(HttpRouterTest, NotFoundVersusMethodNotAllowed) {
  const HttpRouter r = Api();
  EXPECT_EQ(r.Match("GET", "/").result, Result::kNotFound);
  EXPECT_EQ(r.Match("GET", "/v1").result, Result::kNotFound);
  EXPECT_EQ(r.Match("GET", "/v2/models/simple/bogus").result, Result::kNotFound);
  EXPECT_EQ(r.Match("GET", "/v2/models/simple/versions").result, Result::kNotFound);
  EXPECT_EQ(r.Match("POST", "/v2/models/simple/infer/more").result, Result::kNotFound);
  EXPECT_EQ(r.Match("GET", "/v2/a/b/c/d/e/f/g/h/i").result, Result::kNotFound);  // too long

  EXPECT_EQ(r.Match("GET", "/v2/models/simple/infer").result, Result::kMethodNotAllowed);
  EXPECT_EQ(r.Match("POST", "/v2").result, Result::kMethodNotAllowed);
  EXPECT_EQ(r.Match("POST", "/v2/models/stats").result, Result::kMethodNotAllowed);
  EXPECT_EQ(r.Match("GET", "/v2/repository/index").result, Result::kMethodNotAllowed);
  EXPECT_EQ(r.Match("DELETE", "/v2/systemsharedmemory/register").result, Result::kMethodNotAllowed);
  // A bad escape in a path only another method serves is still 405.
  EXPECT_EQ(r.Match("GET", "/v2/models/%zz/infer").result, Result::kMethodNotAllowed);
}

TEST(HttpRouterTest, EmptySegmentsAreSkipped) {
  const HttpRouter r = Api();
  auto m = r.Match("POST", "//v2//models/simple//infer/");
  ASSERT_EQ(m.result, Result::kFound);
  EXPECT_EQ(m.route, kInfer);
  EXPECT_EQ(m.params.model, "simple");
  EXPECT_EQ(r.Match("GET", "/v2/").route, kServer);
}

TEST(HttpRouterTest, MalformedPatternsAreRefused) {
  HttpRouter r;
  EXPECT_FALSE(r.Add("GET", "/v2/{nope}", 0).ok());
  EXPECT_FALSE(r.Add("GET", "/v2[/a", 0).ok());
  EXPECT_FALSE(r.Add("GET", "/v2]/a[", 0).ok());
  EXPECT_FALSE(r.Add("GET", "/v2[/a][/b]", 0).ok());
  EXPECT_FALSE(r.Add("GET", "/1/2/3/4/5/6/7/8/9", 0).ok());
  EXPECT_TRUE(r.Add("GET", "/v2[/a]", 0).ok());
}

TEST(HttpRouterTest, PercentDecode) {
  EXPECT_EQ(*PercentDecode("a%20b"), "a b");
  EXPECT_EQ(*PercentDecode("%2e%2E"), "..");
  EXPECT_EQ(*PercentDecode("plain"), "plain");
  EXPECT_EQ(*PercentDecode("%00"), std::string(1, '\0'));
  EXPECT_FALSE(PercentDecode("%").has_value());
  EXPECT_FALSE(PercentDecode("%4").has_value());
  EXPECT_FALSE(PercentDecode("%g0").has_value());
  EXPECT_FALSE(PercentDecode("%+1").has_value());
  EXPECT_FALSE(PercentDecode("%-1").has_value());
  EXPECT_FALSE(PercentDecode("% 1").has_value());
}

}  // namespace
}  // namespace inferd::http
