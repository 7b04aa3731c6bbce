// s3:// URLs (s3_location.h), AWS credentials and region resolution
// (aws_credentials.h) and the error kinds (object_store.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "objectstore/aws_credentials.h"
#include "objectstore/object_store.h"
#include "objectstore/s3_location.h"

namespace inferd::s3 {
namespace {

// ---- s3:// URLs ----------------------------------------------------------------------

S3Location Parse(const char* url) {
  auto loc = ParseS3Url(url);
  EXPECT_TRUE(loc.ok()) << url << ": " << loc.status().message();
  return loc.ok() ? *loc : S3Location{};
}

TEST(S3Location, AwsForm) {
  S3Location l = Parse("s3://my-bucket/path/to/repo");
  EXPECT_EQ(l.scheme, "https");
  EXPECT_EQ(l.endpoint, "");
  EXPECT_EQ(l.bucket, "my-bucket");
  EXPECT_EQ(l.prefix, "path/to/repo");
  EXPECT_FALSE(l.virtual_hosted);
  EXPECT_EQ(l.ToString(), "s3://my-bucket/path/to/repo");
  EXPECT_EQ(Parse("s3://bucket").prefix, "");
  EXPECT_EQ(Parse("s3://bucket/").prefix, "");
}

TEST(S3Location, CustomEndpoints) {
  S3Location l = Parse("s3://127.0.0.1:9000/models/repo");
  EXPECT_EQ(l.scheme, "http");
  EXPECT_EQ(l.endpoint, "127.0.0.1:9000");
  EXPECT_EQ(l.bucket, "models");
  EXPECT_EQ(l.prefix, "repo");
  EXPECT_EQ(l.ToString(), "s3://http://127.0.0.1:9000/models/repo");
  EXPECT_EQ(Parse("s3://http://minio.local:9000/models").scheme, "http");
  S3Location s = Parse("s3://https://rgw.example.com:8443/models/a/b");
  EXPECT_EQ(s.scheme, "https");
  EXPECT_EQ(s.endpoint, "rgw.example.com:8443");
  EXPECT_EQ(s.prefix, "a/b");
  // An explicit scheme makes the port optional.
  S3Location p = Parse("s3://https://rgw.example.com/models");
  EXPECT_EQ(p.endpoint, "rgw.example.com");
  EXPECT_EQ(p.bucket, "models");
  S3Location v6 = Parse("s3://[::1]:9000/models/x");
  EXPECT_EQ(v6.endpoint, "[::1]:9000");
  EXPECT_EQ(v6.bucket, "models");
}

TEST(S3Location, SlashesCollapseAsInTriton) {
  S3Location l = Parse("s3://host:80//bucket//a///b/");
  EXPECT_EQ(l.bucket, "bucket");
  EXPECT_EQ(l.prefix, "a/b");
}

TEST(S3Location, KeysWithAnyCharactersKeepTheEndpoint) {
  // Triton's regex falls back to bucket "host:9000" here.
  S3Location l = Parse("s3://host:9000/models/my repo+v2/caf\xC3\xA9~=%20");
  EXPECT_EQ(l.endpoint, "host:9000");
  EXPECT_EQ(l.bucket, "models");
  EXPECT_EQ(l.prefix, "my repo+v2/caf\xC3\xA9~=%20");  // literal, no decoding
}

TEST(S3Location, HostWithoutPortIsABucketAsInTriton) {
  S3Location l = Parse("s3://localhost/models");
  EXPECT_EQ(l.endpoint, "");
  EXPECT_EQ(l.bucket, "localhost");
  EXPECT_EQ(l.prefix, "models");
}

TEST(S3Location, Errors) {
  struct Case {
    const char* url;
    const char* says;
  } cases[] = {
      {"s3://", "no bucket name"},
      {"s3:////", "no bucket name"},
      {"s3://host:9000", "no bucket name"},
      {"s3://host:9000/", "no bucket name"},
      {"s3://https://", "no bucket name"},
      {"s3://host:0/b", "bad port"},
      {"s3://host:65536/bucket", "bad port"},
      {"s3://host:/bucket", "bad port"},
      {"s3://host:9x/bucket", "bad port"},
      {"s3://user:pw@host:9000/bucket", "credentials do not belong"},
      {"s3://Models/x", "invalid bucket name 'Models'"},
      {"s3://host:9000/My_Bucket", "invalid bucket name"},
      {"s3://ab/x", "invalid bucket name"},
      {"s3://-ab/x", "invalid bucket name"},
      {"s3://ab./x", "invalid bucket name"},
      {"s3://[::1/b", "unclosed"},
      {"s3://ho$t:80/bucket", "bad host name"},
      {"gs://bucket", "not an s3:// URL"},
  };
  for (const Case& c : cases) {
    auto r = ParseS3Url(c.url);
    ASSERT_FALSE(r.ok()) << c.url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.url;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.url << ": " << r.status().message();
  }
  // The refusal does not repeat the password.
  EXPECT_EQ(ParseS3Url("s3://user:pw@host:9000/bucket").status().message().find("pw"),
            std::string::npos);
  EXPECT_TRUE(IsS3Url("s3://x"));
  EXPECT_FALSE(IsS3Url("S3://x"));
  EXPECT_FALSE(IsS3Url("/models"));
}

// ---- credentials ---------------------------------------------------------------------

class AwsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/inferd_aws_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_["HOME"] = dir_;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  void Write(const std::string& relative, const std::string& text) {
    std::string path = dir_ + "/" + relative;
    ::mkdir((dir_ + "/.aws").c_str(), 0700);
    std::ofstream(path) << text;
  }
  StatusOr<AwsConfig> Resolve() {
    return ResolveAwsConfig([this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    });
  }

  std::string dir_;
  std::map<std::string, std::string> env_;
};

TEST_F(AwsConfigTest, NothingMeansAnonymousInUsEast1) {
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->credentials.anonymous());
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_EQ(c->source, "anonymous");
}

TEST_F(AwsConfigTest, EnvironmentFirst) {
  Write(".aws/credentials", "[default]\naws_access_key_id=FILE\naws_secret_access_key=FS\n");
  env_["AWS_ACCESS_KEY_ID"] = "AKID";
  env_["AWS_SECRET_ACCESS_KEY"] = "SECRET";
  env_["AWS_SESSION_TOKEN"] = "TOKEN";
  env_["AWS_DEFAULT_REGION"] = "eu-west-1";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->credentials.access_key_id, "AKID");
  EXPECT_EQ(c->credentials.secret_access_key, "SECRET");
  EXPECT_EQ(c->credentials.session_token, "TOKEN");
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->source, "environment");
  env_["AWS_REGION"] = "ap-south-1";
  EXPECT_EQ(Resolve()->region, "ap-south-1");
}

TEST_F(AwsConfigTest, HalfAnEnvironmentFallsBackToTheFiles) {
  Write(".aws/credentials", "[default]\naws_access_key_id=FILE\naws_secret_access_key=FS\n");
  env_["AWS_ACCESS_KEY_ID"] = "AKID";
  auto c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->credentials.access_key_id, "FILE");
}

TEST_F(AwsConfigTest, DefaultProfileOfTheFiles) {
  Write(".aws/credentials",
        "# comment\n; another\n[other]\naws_access_key_id = O\naws_secret_access_key = OS\n\n"
        "[default]\r\nAWS_Access_Key_Id   =   DK  \r\naws_secret_access_key=DS=x/y+z\n"
        "aws_session_token = DT\n");
  Write(".aws/config",
        "[default]\nregion = us-west-2\ns3 =\n  addressing_style = path\n"
        "[profile other]\nregion=eu-central-1\n");
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->credentials.access_key_id, "DK");
  EXPECT_EQ(c->credentials.secret_access_key, "DS=x/y+z");
  EXPECT_EQ(c->credentials.session_token, "DT");
  EXPECT_EQ(c->region, "us-west-2");
  EXPECT_EQ(c->source, "profile 'default' of " + dir_ + "/.aws/credentials");
}

TEST_F(AwsConfigTest, NamedProfileAndFileOverrides) {
  Write("creds",
        "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n"
        "[prod]\naws_access_key_id=P\naws_secret_access_key=PS\n");
  Write("conf", "[default]\nregion=us-west-2\n[profile prod]\nregion=eu-north-1\n");
  env_["AWS_SHARED_CREDENTIALS_FILE"] = dir_ + "/creds";
  env_["AWS_CONFIG_FILE"] = dir_ + "/conf";
  env_["AWS_PROFILE"] = "prod";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->credentials.access_key_id, "P");
  EXPECT_EQ(c->region, "eu-north-1");
  EXPECT_EQ(c->source, "profile 'prod' of " + dir_ + "/creds");
}

TEST_F(AwsConfigTest, KeysInTheConfigFileAndCredentialsFileWins) {
  Write(".aws/config",
        "[profile dev]\naws_access_key_id=C\naws_secret_access_key=CS\n"
        "region=sa-east-1\n");
  env_["AWS_PROFILE"] = "dev";
  auto c = Resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->credentials.access_key_id, "C");
  EXPECT_EQ(c->region, "sa-east-1");
  Write(".aws/credentials", "[dev]\naws_access_key_id=K\naws_secret_access_key=KS\n");
  EXPECT_EQ(Resolve()->credentials.access_key_id, "K");
}

TEST_F(AwsConfigTest, DefaultIsNotInheritedAndSectionsNeedThePrefix) {
  // "[dev]" in the config file is not profile dev (it needs "[profile dev]").
  Write(".aws/config", "[default]\nregion=us-west-2\n[dev]\nregion=eu-west-3\n");
  Write(".aws/credentials", "[dev]\naws_access_key_id=K\naws_secret_access_key=KS\n");
  env_["AWS_PROFILE"] = "dev";
  auto c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->region, "us-east-1");
}

TEST_F(AwsConfigTest, MissingNamedProfileIsAnError) {
  Write(".aws/credentials", "[default]\naws_access_key_id=D\naws_secret_access_key=DS\n");
  env_["AWS_PROFILE"] = "nope";
  auto c = Resolve();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'nope'"), std::string::npos);
  EXPECT_EQ(c.status().message().find("DS"), std::string::npos);
}

TEST_F(AwsConfigTest, UnsupportedProviderIsAnError) {
  Write(".aws/config", "[profile role]\nrole_arn=arn:aws:iam::1:role/x\nsource_profile=default\n");
  env_["AWS_PROFILE"] = "role";
  auto c = Resolve();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("role_arn"), std::string::npos);
}

TEST_F(AwsConfigTest, UnreadableFileIsAnError) {
  ::mkdir((dir_ + "/.aws").c_str(), 0700);
  ::mkdir((dir_ + "/.aws/credentials").c_str(), 0700);  // a directory cannot be read as a file
  auto c = Resolve();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(".aws/credentials"), std::string::npos);
}

TEST_F(AwsConfigTest, TildeInFileVariables) {
  Write("c2", "[default]\naws_access_key_id=T\naws_secret_access_key=TS\n");
  env_["AWS_SHARED_CREDENTIALS_FILE"] = "~/c2";
  auto c = Resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->credentials.access_key_id, "T");
}

// ---- error kinds ---------------------------------------------------------------------

TEST(S3ErrorKind, FromStatus) {
  EXPECT_EQ(KindOf(Status::Ok()), S3ErrorKind::kNone);
  EXPECT_EQ(KindOf(DeadlineExceeded("x")), S3ErrorKind::kTimeout);
  EXPECT_EQ(KindOf(PermissionDenied("x")), S3ErrorKind::kAccessDenied);
  EXPECT_EQ(KindOf(NotFound("x")), S3ErrorKind::kNotFound);
  EXPECT_EQ(KindOf(DataLoss("x")), S3ErrorKind::kTruncated);
  EXPECT_EQ(KindOf(Unavailable("cannot reach http://h:1")), S3ErrorKind::kUnreachable);
  EXPECT_EQ(KindOf(Unavailable("server error from http://h:1 (HTTP 503)")), S3ErrorKind::kServer);
  EXPECT_EQ(KindOf(InvalidArgument("x")), S3ErrorKind::kOther);
  EXPECT_EQ(KindOf(ResourceExhausted("x")), S3ErrorKind::kOther);
  EXPECT_STREQ(S3ErrorKindName(S3ErrorKind::kUnreachable), "unreachable");
  EXPECT_STREQ(S3ErrorKindName(S3ErrorKind::kTimeout), "timeout");
  EXPECT_STREQ(S3ErrorKindName(S3ErrorKind::kAccessDenied), "access_denied");
  EXPECT_STREQ(S3ErrorKindName(S3ErrorKind::kServer), "server");
  EXPECT_STREQ(S3ErrorKindName(S3ErrorKind::kNone), "none");
}

}  // namespace
}  // namespace inferd::s3
