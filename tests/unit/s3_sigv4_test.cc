// SigV4 (src/objectstore/sigv4.h) against AWS's documented examples
// (docs/PROTOCOL-NEXT §7.3), bit for bit, and S3's URI-encoding rules.
#include <gtest/gtest.h>

#include <ctime>

#include "objectstore/digest.h"
#include "objectstore/sigv4.h"

namespace inferd::s3::sigv4 {
namespace {

const AwsCredentials kAws{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
constexpr const char* kDate = "20130524T000000Z";

Request Example(std::string uri, const Params& query) {
  Request r;
  r.method = "GET";
  r.canonical_uri = std::move(uri);
  r.canonical_query = CanonicalQueryString(query);
  r.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
               {"x-amz-date", kDate},
               {"x-amz-content-sha256", std::string(kEmptyPayloadSha256)}};
  return r;
}

void ExpectVector(const Request& r, const char* signed_headers, const char* request_hash,
                  const char* signature) {
  Canonical c = CanonicalRequest(r);
  EXPECT_EQ(c.signed_headers, signed_headers);
  EXPECT_EQ(Sha256Hex(c.request), request_hash) << c.request;
  std::string sts = StringToSign(kDate, Scope(kDate, "us-east-1"), c.request);
  EXPECT_EQ(Signature(SigningKey(kAws.secret_access_key, kDate, "us-east-1"), sts), signature);
  EXPECT_EQ(Authorize(r, kAws, "us-east-1", kDate),
            std::string("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                        "aws4_request, SignedHeaders=") +
                signed_headers + ", Signature=" + signature);
}

TEST(SigV4, AwsGetObjectExample) {
  Request r = Example("/test.txt", {});
  r.headers.emplace_back("Range", "bytes=0-9");
  ExpectVector(r, "host;range;x-amz-content-sha256;x-amz-date",
               "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
               "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, AwsListObjectsExample) {
  // Given out of order: the canonical query sorts.
  Request r = Example("/", {{"prefix", "J"}, {"max-keys", "2"}});
  EXPECT_EQ(r.canonical_query, "max-keys=2&prefix=J");
  ExpectVector(r, "host;x-amz-content-sha256;x-amz-date",
               "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
               "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, AwsGetBucketLifecycleExample) {
  Request r = Example("/", {{"lifecycle", ""}});
  EXPECT_EQ(r.canonical_query, "lifecycle=");
  ExpectVector(r, "host;x-amz-content-sha256;x-amz-date",
               "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
               "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, CanonicalRequestLayout) {
  Request r = Example("/test.txt", {});
  EXPECT_EQ(
      CanonicalRequest(r).request,
      "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
      "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
      "x-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SigV4, HeaderValuesTrimmedAndJoined) {
  EXPECT_EQ(CanonicalHeaderValue("  a   b \t c  "), "a b c");
  EXPECT_EQ(CanonicalHeaderValue(""), "");
  Request r;
  r.method = "GET";
  r.canonical_uri = "/";
  r.headers = {{"X-Amz-Meta-B", " 2 "}, {"x-amz-meta-a", "1"}, {"X-AMZ-META-B", "3"}};
  Canonical c = CanonicalRequest(r);
  EXPECT_EQ(c.signed_headers, "x-amz-meta-a;x-amz-meta-b");
  EXPECT_NE(c.request.find("x-amz-meta-a:1\nx-amz-meta-b:2,3\n\n"), std::string::npos);
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(UriEncode("a b", false), "a%20b");
  EXPECT_EQ(UriEncode("a+b", false), "a%2Bb");
  EXPECT_EQ(UriEncode("~-._AZaz09", false), "~-._AZaz09");
  EXPECT_EQ(UriEncode("dir/sub/f", false), "dir/sub/f");
  EXPECT_EQ(UriEncode("dir/sub/f", true), "dir%2Fsub%2Ff");
  EXPECT_EQ(UriEncode("\xC3\xA9\xE2\x82\xAC", false), "%C3%A9%E2%82%AC");  // é€ as UTF-8 bytes
  EXPECT_EQ(UriEncode("=&?%*", true), "%3D%26%3F%25%2A");
  EXPECT_EQ(UriEncode(std::string("\0\xff", 2), true), "%00%FF");
  // Encoded once: an already-encoded key is a different key.
  EXPECT_EQ(UriEncode("a%20b", false), "a%2520b");
}

TEST(SigV4, QueryEncodingSortsEncodedNames) {
  EXPECT_EQ(
      CanonicalQueryString({{"prefix", "models/a b+c"},
                            {"list-type", "2"},
                            {"continuation-token", "1/x=="},
                            {"encoding-type", "url"}}),
      "continuation-token=1%2Fx%3D%3D&encoding-type=url&list-type=2&prefix=models%2Fa%20b%2Bc");
  EXPECT_EQ(CanonicalQueryString({}), "");
  // Sorted by name, then by value.
  EXPECT_EQ(CanonicalQueryString({{"b", "2"}, {"a", "z"}, {"b", "1"}}), "a=z&b=1&b=2");
}

TEST(SigV4, UriDecode) {
  std::string out;
  ASSERT_TRUE(UriDecode("a%20b%2Bc+d%c3%a9", true, &out));
  EXPECT_EQ(out, "a b+c d\xC3\xA9");
  ASSERT_TRUE(UriDecode("a+b", false, &out));
  EXPECT_EQ(out, "a+b");
  EXPECT_FALSE(UriDecode("%", true, &out));
  EXPECT_FALSE(UriDecode("%2", true, &out));
  EXPECT_FALSE(UriDecode("%zz", true, &out));
  EXPECT_FALSE(UriDecode("ab%4", true, &out));
}

TEST(SigV4, AmzDate) {
  std::tm tm{};
  tm.tm_year = 2013 - 1900;
  tm.tm_mon = 4;
  tm.tm_mday = 24;
  auto t = std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::milliseconds(999);
  EXPECT_EQ(AmzDate(t), "20130524T000000Z");
  EXPECT_EQ(Scope("20130524T000000Z", "eu-west-1"), "20130524/eu-west-1/s3/aws4_request");
}

TEST(SigV4, SessionTokenIsSigned) {
  Request r = Example("/k", {});
  AwsCredentials temp = kAws;
  temp.session_token = "FQoGZXIvYXdzE//token==";
  r.headers.emplace_back("x-amz-security-token", temp.session_token);
  std::string auth = Authorize(r, temp, "us-east-1", kDate);
  EXPECT_NE(auth.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
            std::string::npos);
  EXPECT_EQ(auth.find(temp.session_token), std::string::npos);
  EXPECT_EQ(auth.find(temp.secret_access_key), std::string::npos);
}

TEST(Digest, KnownValues) {
  EXPECT_EQ(Sha256Hex(""), kEmptyPayloadSha256);
  Md5 md5;
  md5.Update("The quick brown fox ", 20);
  md5.Update("jumps over the lazy dog", 23);
  EXPECT_EQ(md5.FinalHex(), "9e107d9d372bb6826bd81d3542a419d6");
  Md5 empty;
  EXPECT_EQ(empty.FinalHex(), "d41d8cd98f00b204e9800998ecf8427e");
}

}  // namespace
}  // namespace inferd::s3::sigv4
