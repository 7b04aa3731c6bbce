// S3Client (src/objectstore/s3_client.h) against a loopback fake S3: a
// thread per connection serving canned answers, recording every request so
// the tests can check what was sent, and that the signature the client sent
// verifies for exactly those bytes.
#include "objectstore/s3_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "fake_s3_server.h"
#include "objectstore/digest.h"
#include "objectstore/sigv4.h"

namespace inferd::s3 {
namespace {

using namespace std::chrono_literals;
using testing::ErrorXml;
using testing::FakeS3;
using testing::Http;
using testing::Recorded;
using testing::Reply;

const AwsCredentials kCreds{"AKIDTESTKEY123", "s3cr3t/KEY+never-shown", ""};

ClientOptions Options(AwsCredentials creds = kCreds) {
  ClientOptions o;
  o.credentials = std::move(creds);
  o.region = "us-east-1";
  o.connect_timeout_ms = 2000;
  o.low_speed_bytes_per_s = 1000;
  o.low_speed_window_s = 1;
  o.request_timeout_ms = 5000;
  return o;
}

S3Location Loc(int port, const std::string& bucket = "models") {
  auto loc = ParseS3Url("s3://127.0.0.1:" + std::to_string(port) + "/" + bucket + "/repo");
  EXPECT_TRUE(loc.ok());
  return *loc;
}

// Recomputes the signature from what the server received, with the secret
// the test knows: the client signs exactly what it sends.
void ExpectSignedCorrectly(const Recorded& r, const AwsCredentials& creds = kCreds) {
  const std::string& auth = r.headers.at("authorization");
  ASSERT_EQ(auth.rfind("AWS4-HMAC-SHA256 Credential=" + creds.access_key_id + "/", 0), 0u) << auth;
  size_t sh = auth.find("SignedHeaders=");
  size_t sig = auth.find(", Signature=");
  ASSERT_NE(sh, std::string::npos);
  ASSERT_NE(sig, std::string::npos);
  std::string signed_headers = auth.substr(sh + 14, sig - sh - 14);
  EXPECT_NE(signed_headers.find("host;x-amz-content-sha256;x-amz-date"), std::string::npos);

  sigv4::Params params;
  std::istringstream q(r.query);
  std::string pair;
  while (std::getline(q, pair, '&')) {
    size_t eq = pair.find('=');
    std::string name, value;
    ASSERT_TRUE(sigv4::UriDecode(pair.substr(0, eq), false, &name));
    ASSERT_TRUE(
        sigv4::UriDecode(eq == std::string::npos ? "" : pair.substr(eq + 1), false, &value));
    params.emplace_back(name, value);
  }
  EXPECT_EQ(sigv4::CanonicalQueryString(params), r.query) << "the query sent is canonical";

  sigv4::Request req;
  req.method = r.method;
  req.canonical_uri = r.path;
  req.canonical_query = r.query;
  std::istringstream names(signed_headers);
  std::string name;
  while (std::getline(names, name, ';')) {
    ASSERT_TRUE(r.headers.count(name)) << name << " is signed but not sent";
    req.headers.emplace_back(name, r.headers.at(name));
  }
  req.payload_hash = r.headers.at("x-amz-content-sha256");
  EXPECT_EQ(req.payload_hash, sigv4::kEmptyPayloadSha256);
  EXPECT_EQ(sigv4::Authorize(req, creds, "us-east-1", r.headers.at("x-amz-date")), auth);
}

std::string QueryParam(const Recorded& r, const std::string& name) {
  std::istringstream q(r.query);
  std::string pair;
  while (std::getline(q, pair, '&')) {
    if (pair.rfind(name + "=", 0) == 0) {
      std::string v;
      sigv4::UriDecode(pair.substr(name.size() + 1), false, &v);
      return v;
    }
  }
  return "<absent>";
}

std::string Page(const std::string& entries, const std::string& next) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>models</Name>"
         "<EncodingType>url</EncodingType><IsTruncated>" +
         std::string(next.empty() ? "false" : "true") + "</IsTruncated>" +
         (next.empty() ? "" : "<NextContinuationToken>" + next + "</NextContinuationToken>") +
         entries + "</ListBucketResult>";
}

std::string Entry(const std::string& encoded_key, int size) {
  return "<Contents><Key>" + encoded_key + "</Key><Size>" + std::to_string(size) +
         "</Size><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag></Contents>";
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "s3_client_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// ---- listing -------------------------------------------------------------------------

TEST(S3Client, ListsThreePagesFollowingTokensAndSignsEachRequest) {
  FakeS3 server([](const Recorded& r) {
    std::string token = QueryParam(r, "continuation-token");
    if (token == "<absent>") {
      return Http(200, Page(Entry("repo/a", 1) + Entry("repo/b%20c", 2), "tok/1+=="));
    }
    if (token == "tok/1+==") return Http(200, Page(Entry("repo/d%2Be", 3), "tok2"));
    if (token == "tok2") return Http(200, Page(Entry("repo/f%C3%A9/", 0), ""));
    return Http(400, ErrorXml("InvalidArgument", "bad token"));
  });
  S3Client client(Loc(server.port()), Options());
  auto objects = client.ListObjects("repo/");
  ASSERT_TRUE(objects.ok()) << objects.status().message();
  ASSERT_EQ(objects->size(), 4u);
  EXPECT_EQ((*objects)[0].key, "repo/a");
  EXPECT_EQ((*objects)[1].key, "repo/b c");
  EXPECT_EQ((*objects)[1].size, 2u);
  EXPECT_EQ((*objects)[2].key, "repo/d+e");
  EXPECT_EQ((*objects)[3].key, "repo/f\xC3\xA9/");
  EXPECT_EQ((*objects)[0].etag, "0123456789abcdef0123456789abcdef");

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const Recorded& r : requests) {
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.path, "/models");
    EXPECT_EQ(r.headers.at("host"), "127.0.0.1:" + std::to_string(server.port()));
    EXPECT_EQ(QueryParam(r, "list-type"), "2");
    EXPECT_EQ(QueryParam(r, "prefix"), "repo/");
    EXPECT_EQ(QueryParam(r, "encoding-type"), "url");
    EXPECT_EQ(QueryParam(r, "delimiter"), "<absent>");
    ExpectSignedCorrectly(r);
  }
  // Keep-alive: one connection for the three pages.
  EXPECT_EQ(requests[2].connection, requests[0].connection);
}

TEST(S3Client, ListsCommonPrefixesWithADelimiter) {
  FakeS3 server([](const Recorded& r) {
    if (QueryParam(r, "continuation-token") == "<absent>") {
      return Http(200, Page("<CommonPrefixes><Prefix>repo/m1/</Prefix></CommonPrefixes>", "t"));
    }
    return Http(200, Page("<CommonPrefixes><Prefix>repo/m%202/</Prefix></CommonPrefixes>", ""));
  });
  S3Client client(Loc(server.port()), Options());
  auto prefixes = client.ListCommonPrefixes("repo/");
  ASSERT_TRUE(prefixes.ok()) << prefixes.status().message();
  EXPECT_EQ(*prefixes, (std::vector<std::string>{"repo/m 2/", "repo/m1/"}));
  for (const Recorded& r : server.requests()) EXPECT_EQ(QueryParam(r, "delimiter"), "/");
}

TEST(S3Client, ListingThatDoesNotAdvanceIsAnError) {
  FakeS3 repeat([](const Recorded&) { return Http(200, Page(Entry("k", 1), "same")); });
  S3Client client(Loc(repeat.port()), Options());
  auto r = client.ListObjects("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("continuation token repeated"), std::string::npos);
  EXPECT_EQ(KindOf(r.status()), S3ErrorKind::kServer);
  EXPECT_EQ(repeat.requests().size(), 2u);

  FakeS3 empty([](const Recorded&) { return Http(200, Page("", "t")); });
  S3Client client2(Loc(empty.port()), Options());
  r = client2.ListObjects("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("without any entry"), std::string::npos);

  FakeS3 garbage([](const Recorded&) { return Http(200, "<html>proxy login</html"); });
  S3Client client3(Loc(garbage.port()), Options());
  r = client3.ListObjects("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("malformed XML"), std::string::npos);
}

// ---- errors --------------------------------------------------------------------------

TEST(S3Client, AccessDeniedNamesBucketAndKeyButNoSecret) {
  AwsCredentials temp = kCreds;
  temp.session_token = "SESSIONTOKEN-secret";
  FakeS3 server([](const Recorded& r) {
    // What AWS sends for SignatureDoesNotMatch: the string to sign, the
    // signature provided and the key id; none may reach the message.
    std::string auth = r.headers.count("authorization") ? r.headers.at("authorization") : "";
    return Http(
        403, ErrorXml("SignatureDoesNotMatch", "The request signature we calculated does not match",
                      "<AWSAccessKeyId>AKIDTESTKEY123</AWSAccessKeyId><StringToSign>" + auth +
                          "</StringToSign><SignatureProvided>" + auth + "</SignatureProvided>"));
  });
  S3Client client(Loc(server.port()), Options(temp));
  auto r = client.GetToString("repo/m/config.pbtxt", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("access denied"), std::string::npos) << m;
  EXPECT_NE(m.find("'models'"), std::string::npos) << m;
  EXPECT_NE(m.find("'repo/m/config.pbtxt'"), std::string::npos) << m;
  EXPECT_NE(m.find("SignatureDoesNotMatch"), std::string::npos) << m;
  EXPECT_NE(m.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << m;
  const Recorded sent = server.requests().at(0);
  ExpectSignedCorrectly(sent, temp);
  EXPECT_EQ(sent.headers.at("x-amz-security-token"), temp.session_token);
  std::string auth = sent.headers.at("authorization");
  std::string signature = auth.substr(auth.find("Signature=") + 10);
  EXPECT_EQ(m.find(signature), std::string::npos) << m;
  EXPECT_EQ(m.find(temp.secret_access_key), std::string::npos) << m;
  EXPECT_EQ(m.find(temp.session_token), std::string::npos) << m;
  EXPECT_EQ(m.find(temp.access_key_id), std::string::npos) << m;
  EXPECT_EQ(m.find("AWS4-HMAC"), std::string::npos) << m;
  EXPECT_EQ(KindOf(r.status()), S3ErrorKind::kAccessDenied);

  // HEAD has no body: the status alone says it.
  Status head = client.CheckBucket();
  EXPECT_EQ(head.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(head.message().find("access denied to bucket 'models'"), std::string::npos);
}

TEST(S3Client, NotFoundSaysBucketOrKey) {
  FakeS3 server([](const Recorded& r) {
    if (r.path == "/nobucket/k") return Http(404, ErrorXml("NoSuchBucket", "no bucket"));
    if (r.method == "HEAD") return Http(404, ErrorXml("NoSuchKey", "x"), "", /*head=*/true);
    return Http(404, ErrorXml("NoSuchKey", "The specified key does not exist."));
  });
  S3Client client(Loc(server.port()), Options());
  auto key = client.GetToString("repo/missing", 100);
  EXPECT_EQ(key.status().code(), StatusCode::kNotFound);
  EXPECT_NE(key.status().message().find("object 'repo/missing' not found in bucket 'models'"),
            std::string::npos)
      << key.status().message();
  auto head = client.HeadObject("repo/missing");
  EXPECT_EQ(head.status().code(), StatusCode::kNotFound);
  EXPECT_NE(head.status().message().find("object 'repo/missing' not found"), std::string::npos);
  Status bucket = client.CheckBucket();
  EXPECT_EQ(bucket.code(), StatusCode::kNotFound);
  EXPECT_NE(bucket.message().find("bucket 'models' not found at http://127.0.0.1:"),
            std::string::npos)
      << bucket.message();

  S3Client other(Loc(server.port(), "nobucket"), Options());
  auto nb = other.GetToString("k", 100);
  EXPECT_EQ(nb.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nb.status().message().find("bucket 'nobucket' not found"), std::string::npos)
      << nb.status().message();
  EXPECT_NE(nb.status().message().find("NoSuchBucket"), std::string::npos);
}

TEST(S3Client, ServerErrorsAreUnavailable) {
  FakeS3 server([](const Recorded&) {
    return Http(503, ErrorXml("SlowDown", "Please reduce your request rate."));
  });
  S3Client client(Loc(server.port()), Options());
  auto r = client.ListObjects("repo/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("HTTP 503 SlowDown"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(KindOf(r.status()), S3ErrorKind::kServer);
  EXPECT_EQ(server.requests().size(), 1u) << "no retry inside the client";
}

TEST(S3Client, RedirectNamesTheRegion) {
  FakeS3 server([](const Recorded&) {
    return Http(301, ErrorXml("PermanentRedirect", "use the right endpoint"),
                "x-amz-bucket-region: eu-west-1\r\nLocation: http://elsewhere/\r\n");
  });
  S3Client client(Loc(server.port()), Options());
  Status s = client.CheckBucket();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("region 'eu-west-1', not 'us-east-1'"), std::string::npos)
      << s.message();
  EXPECT_EQ(server.requests().size(), 1u) << "redirects are not followed";
}

TEST(S3Client, OtherRefusalsAreInvalidArgument) {
  FakeS3 server([](const Recorded&) {
    return Http(400, ErrorXml("AuthorizationHeaderMalformed", "the region 'us-east-1' is wrong"));
  });
  S3Client client(Loc(server.port()), Options());
  auto r = client.GetToString("k", 10);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("AuthorizationHeaderMalformed"), std::string::npos);
}

TEST(S3Client, ConnectionRefusedIsUnavailableNamingTheEndpoint) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);  // bound, never listening, closed: nothing answers there
  S3Client client(Loc(port), Options());
  Status s = client.CheckBucket();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("http://127.0.0.1:" + std::to_string(port)), std::string::npos)
      << s.message();
  EXPECT_EQ(KindOf(s), S3ErrorKind::kUnreachable);
}

TEST(S3Client, DroppedFreshConnectionIsNotRetried) {
  FakeS3 server([](const Recorded&) { return Reply{"", 0, true}; });
  S3Client client(Loc(server.port()), Options());
  Status s = client.CheckBucket();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.message();
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(S3Client, StaleKeepAliveConnectionIsRetriedOnce) {
  std::atomic<int> n{0};
  FakeS3 server([&](const Recorded&) {
    // The second request arrives on the kept-alive connection, which the
    // server then drops without an answer (as an idle-timeout race does).
    if (++n == 2) return Reply{"", 0, true};
    return Http(200, "", "", /*head=*/true);
  });
  S3Client client(Loc(server.port()), Options());
  ASSERT_TRUE(client.CheckBucket().ok());
  Status s = client.CheckBucket();
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.connections(), 2);
}

// ---- downloads -----------------------------------------------------------------------

TEST(S3Client, GetToFileVerifiesSizeAndMd5) {
  const std::string data = "weights\0and\xffmore", path = TempPath("ok");
  Md5 md5;
  md5.Update(data.data(), data.size());
  std::string etag = md5.FinalHex();
  FakeS3 server([&](const Recorded& r) {
    if (r.method == "HEAD") {
      return Http(200, data, "ETag: \"" + etag + "\"\r\n", /*head=*/true);
    }
    return Http(200, data, "ETag: \"" + etag + "\"\r\n");
  });
  S3Client client(Loc(server.port()), Options());
  auto info = client.HeadObject("repo/m/1/model.bin");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(info->etag, etag);
  EXPECT_EQ(info->key, "repo/m/1/model.bin");
  Status s = client.GetToFile(*info, path);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ReadFile(path), data);
  ExpectSignedCorrectly(server.requests().back());

  // A multipart ETag is not an MD5: the size alone is checked.
  ObjectInfo multipart{info->key, info->size, "0123456789abcdef0123456789abcdef-2"};
  EXPECT_TRUE(client.GetToFile(multipart, path).ok());
  // A plain ETag that does not match is a corrupt download.
  ObjectInfo wrong{info->key, info->size, "0123456789abcdef0123456789abcdef"};
  s = client.GetToFile(wrong, path);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("MD5 of s3://http://127.0.0.1:"), std::string::npos) << s.message();
  EXPECT_EQ(KindOf(s), S3ErrorKind::kTruncated);
  // More bytes than listed: the object changed.
  ObjectInfo smaller{info->key, 3, ""};
  s = client.GetToFile(smaller, path);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("longer than the 3 bytes"), std::string::npos) << s.message();
  // Fewer bytes than listed.
  ObjectInfo larger{info->key, 100, ""};
  s = client.GetToFile(larger, path);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated: got " + std::to_string(data.size()) + " of 100 bytes"),
            std::string::npos)
      << s.message();
  std::remove(path.c_str());
}

TEST(S3Client, KmsEncryptedObjectsSkipTheMd5Check) {
  FakeS3 server([](const Recorded& r) {
    std::string sse = r.path.find("kms") != std::string::npos
                          ? "x-amz-server-side-encryption: aws:kms\r\n"
                          : "x-amz-server-side-encryption-customer-algorithm: AES256\r\n";
    return Http(200, "data", "ETag: \"0123456789abcdef0123456789abcdef\"\r\n" + sse);
  });
  S3Client client(Loc(server.port()), Options());
  const std::string path = TempPath("kms");
  EXPECT_TRUE(client.GetToFile({"repo/kms", 4, "0123456789abcdef0123456789abcdef"}, path).ok());
  EXPECT_TRUE(client.GetToFile({"repo/ssec", 4, "0123456789abcdef0123456789abcdef"}, path).ok());
  EXPECT_EQ(client.GetToFile({"repo/kms", 5, ""}, path).code(), StatusCode::kDataLoss);
  std::remove(path.c_str());
}

TEST(S3Client, TruncatedBodyIsDataLoss) {
  FakeS3 server([](const Recorded&) {
    std::string raw = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(100, 'x');
    return Reply{raw, 0, true};
  });
  S3Client client(Loc(server.port()), Options());
  const std::string path = TempPath("trunc");
  Status s = client.GetToFile(ObjectInfo{"repo/big", 1000, ""}, path);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated: got 100 of 1000 bytes of s3://http://127.0.0.1:" +
                             std::to_string(server.port()) + "/models/repo/big"),
            std::string::npos)
      << s.message();
  auto str = client.GetToString("repo/big", 1 << 20);
  EXPECT_EQ(str.status().code(), StatusCode::kDataLoss);
  std::remove(path.c_str());
}

TEST(S3Client, SlowServerHitsTheLowSpeedLimit) {
  FakeS3 server([](const Recorded&) {
    std::string raw = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(10, 'x');
    return Reply{raw, 5000, true};
  });
  S3Client client(Loc(server.port()), Options());
  const std::string path = TempPath("slow");
  auto start = std::chrono::steady_clock::now();
  Status s = client.GetToFile(ObjectInfo{"repo/slow", 100000, ""}, path);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.message();
  EXPECT_NE(s.message().find("'repo/slow'"), std::string::npos) << s.message();
  EXPECT_EQ(KindOf(s), S3ErrorKind::kTimeout);
  EXPECT_LT(took, 4s);
  std::remove(path.c_str());
}

TEST(S3Client, GetToStringIsBounded) {
  FakeS3 server([](const Recorded&) { return Http(200, std::string(5000, 'y')); });
  S3Client client(Loc(server.port()), Options());
  auto r = client.GetToString("repo/m/config.pbtxt", 4999);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("larger than the 4999 bytes allowed"), std::string::npos)
      << r.status().message();
  auto ok = client.GetToString("repo/m/config.pbtxt", 5000);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 5000u);
}

TEST(S3Client, KeysArePercentEncodedOnceInThePath) {
  FakeS3 server([](const Recorded&) { return Http(200, "ok"); });
  S3Client client(Loc(server.port()), Options());
  ASSERT_TRUE(client.GetToString("repo/my model+v2/caf\xC3\xA9~.txt", 10).ok());
  ASSERT_TRUE(client.GetToString("repo/../a/./b//c%20", 10).ok());
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].path, "/models/repo/my%20model%2Bv2/caf%C3%A9~.txt");
  EXPECT_EQ(requests[1].path, "/models/repo/../a/./b//c%2520");
  for (const Recorded& r : requests) ExpectSignedCorrectly(r);
}

TEST(S3Client, AnonymousRequestsAreNotSigned) {
  FakeS3 server([](const Recorded&) { return Http(200, "public"); });
  S3Client client(Loc(server.port()), Options(AwsCredentials{}));
  auto r = client.GetToString("repo/x", 100);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "public");
  const Recorded sent = server.requests().at(0);
  EXPECT_EQ(sent.headers.count("authorization"), 0u);
  EXPECT_EQ(sent.headers.count("x-amz-date"), 0u);
}

TEST(S3Client, VirtualHostedAddressing) {
  FakeS3 server([](const Recorded&) { return Http(200, "vh"); });
  // curl resolves *.localhost to the loopback itself (RFC 6761), so
  // "models.localhost" reaches the fake without DNS.
  auto loc = ParseS3Url("s3://localhost:" + std::to_string(server.port()) + "/models/repo");
  ASSERT_TRUE(loc.ok());
  loc->virtual_hosted = true;
  S3Client client(*loc, Options());
  auto r = client.GetToString("repo/a b", 100);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Recorded sent = server.requests().at(0);
  EXPECT_EQ(sent.path, "/repo/a%20b");
  EXPECT_EQ(sent.headers.at("host"), "models.localhost:" + std::to_string(server.port()));
  ExpectSignedCorrectly(sent);

  S3Location dotted = *loc;
  dotted.bucket = "my.models";
  dotted.scheme = "https";
  S3Client tls(dotted, Options());
  EXPECT_EQ(tls.CheckBucket().code(), StatusCode::kInvalidArgument);
}

TEST(S3Client, ConcurrentCallsShareThePool) {
  FakeS3 server([](const Recorded& r) { return Http(200, r.path); });
  S3Client client(Loc(server.port()), Options());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string key = "repo/t" + std::to_string(t) + "/" + std::to_string(i);
        auto r = client.GetToString(key, 100);
        if (r.ok() && *r == "/models/" + key) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, 40);
  // Handles (and their connections) are reused, not one per call.
  EXPECT_LE(server.connections(), 8);
}

TEST(S3Client, Describe) {
  auto custom = ParseS3Url("s3://https://rgw.example:8443/models/repo");
  ASSERT_TRUE(custom.ok());
  EXPECT_EQ(S3Client(*custom, Options()).Describe(), "s3://https://rgw.example:8443/models");
  auto aws = ParseS3Url("s3://models/repo");
  ASSERT_TRUE(aws.ok());
  S3Client client(*aws, Options());
  EXPECT_EQ(client.Describe(), "s3://models");
  EXPECT_EQ(client.location().prefix, "repo");
}

}  // namespace
}  // namespace inferd::s3
