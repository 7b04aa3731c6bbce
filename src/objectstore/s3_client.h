// S3Client: the S3 operations a model repository needs (ListObjectsV2,
// HeadBucket, HeadObject, GetObject to memory or streamed to a file), signed
// with AWS Signature Version 4 (or anonymous), over libcurl + OpenSSL.
// Nothing above src/objectstore/ sees libcurl, XML or signatures: the
// S3 repository source (src/repository/s3_repository_source.*) uses only
// this header and s3_location.h / aws_credentials.h.
//
// Ownership: an S3Client owns its configuration (credentials included) and
// a pool of reusable curl handles; it is not copyable.
// Threading: every method may be called from any thread, concurrently (each
// call takes a handle from the pool or makes one).
// Errors (the status codes callers rely on; messages name the bucket and
// key, never a credential, a signature or a signed header):
//   kNotFound          404 (NoSuchKey, NoSuchBucket: the message says which)
//   kPermissionDenied  403 ("access denied to bucket 'b' key 'k'": AccessDenied,
//                      InvalidAccessKeyId, SignatureDoesNotMatch, with S3's code)
//   kUnavailable       connection refused/reset, DNS, TLS, timeouts, 5xx
//                      (SlowDown, ServiceUnavailable, InternalError): retryable
//   kDataLoss          a transfer shorter or longer than announced, or whose
//                      MD5 does not match the ETag
//   kInvalidArgument   anything else S3 refused (4xx), with its code and message
// KindOf(status) (object_store.h) classifies a failure for the metrics.
// In detail (S3 code and message in parentheses when the answer had them):
//   a connect that times out is kUnavailable ("cannot connect to URL ..."),
//   a transfer slower than the low-speed limit or past request_timeout_ms
//   kDeadlineExceeded ("GET bucket 'b' key 'k' at URL timed out: ...");
//   5xx and unreadable answers (bad XML, a listing that does not advance)
//   are kUnavailable with "server error" in the message (KindOf: kServer);
//   a redirect (301 PermanentRedirect: the bucket is in another region) is
//   kInvalidArgument naming the bucket's region when S3 says it;
//   a local file that cannot be written is kResourceExhausted (ENOSPC,
//   EDQUOT) or kInternal.
// Nothing is retried inside the client but a request whose kept-alive
// connection the server had closed before answering (once, on a new one).
//
// Keys and prefixes are whole object keys (location().prefix included).
// Requests are path-style unless location().virtual_hosted; signed with
// x-amz-content-sha256 = SHA-256 of the empty body. libcurl honours the
// usual proxy variables (https_proxy, no_proxy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "objectstore/aws_credentials.h"
#include "objectstore/object_store.h"
#include "objectstore/s3_location.h"

namespace inferd::s3 {

struct ClientOptions {
  AwsCredentials credentials;  // anonymous() -> requests are not signed
  std::string region = "us-east-1";
  int connect_timeout_ms = 5000;
  // A transfer slower than low_speed_bytes_per_s for low_speed_window_s fails
  // with kDeadlineExceeded (bounded waits on a slow store, any file size).
  long low_speed_bytes_per_s = 1024;
  long low_speed_window_s = 30;
  // Whole-request bound for small requests (list pages, HEAD, GetToString).
  int request_timeout_ms = 60000;
};

class S3Client : public ObjectStore {
 public:
  S3Client(S3Location location, ClientOptions options);
  ~S3Client() override;
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Location& location() const;

  // ObjectStore (object_store.h), over ListObjectsV2 (prefix, delimiter,
  // continuation-token; keys requested URL-encoded), HeadBucket, GetObject.
  std::string Describe() const override;
  Status CheckBucket() const override;
  StatusOr<std::vector<ObjectInfo>> ListObjects(const std::string& prefix) const override;
  StatusOr<std::vector<std::string>> ListCommonPrefixes(const std::string& prefix) const override;
  StatusOr<std::string> GetToString(const std::string& key, uint64_t max_bytes) const override;
  Status GetToFile(const ObjectInfo& expected, const std::string& path) const override;

  // HEAD one object.
  StatusOr<ObjectInfo> HeadObject(const std::string& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferd::s3
