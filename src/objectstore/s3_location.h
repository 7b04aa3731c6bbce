// S3Location: an s3:// model repository path, parsed as Triton parses it
// (docs/PROTOCOL-NEXT §7.1), plus inferd's virtual-hosted option.
//
//   s3://bucket/prefix                    AWS, https, region's endpoint
//   s3://host:port/bucket/prefix          custom endpoint, http
//   s3://http://host:port/bucket/prefix   same, explicit
//   s3://https://host:port/bucket/prefix  custom endpoint, https
//
// Where inferd differs from Triton (whose regex fallback silently turns a
// mistyped URL into a request for another bucket on AWS), by failing with
// INVALID_ARGUMENT instead:
//   - a first component with ':' (or an explicit scheme) is always the
//     endpoint, whatever characters the key prefix holds (space, '+', '=',
//     '~', non-ASCII: Triton falls back to "host:port" as the bucket);
//   - a bucket outside S3's rules (3-63 of a-z 0-9 . -, starting and ending
//     with a letter or digit; upper case is Triton's other fallback) is an
//     error naming the rules;
//   - "user:password@" in the endpoint is refused (credentials come from the
//     environment, aws_credentials.h, never from a URL);
//   - with an explicit scheme the port may be left out
//     ("s3://https://host/bucket": port 443; Triton would take "host" as an
//     AWS bucket).
// Unchanged from Triton: without a scheme, a host without a port is a bucket
// name ("s3://localhost/models" is bucket "localhost" on AWS); leading,
// trailing and repeated '/' are dropped; the prefix is taken literally (no
// percent-decoding). IPv6 endpoints are written "[::1]:9000".
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd::s3 {

struct S3Location {
  std::string scheme = "https";  // "http" or "https"
  std::string endpoint;          // "host:port"; empty: AWS, s3.<region>.amazonaws.com
  std::string bucket;
  std::string prefix;  // key prefix of the repository, no leading or trailing '/'; may be empty
  // Virtual-hosted addressing (<bucket>.<endpoint>); path-style otherwise
  // (Triton's choice, and what Ceph RGW and MinIO accept without wildcard DNS).
  // ParseS3Url never sets it: the caller does (a command-line option), and
  // S3Client then sends Host: <bucket>.<endpoint> and paths "/<key>". A
  // bucket with '.' cannot be virtual-hosted over https (the certificate's
  // wildcard covers one label): S3Client answers kInvalidArgument.
  bool virtual_hosted = false;

  // The repository as given, normalised: "s3://[scheme://host:port/]bucket/prefix"
  // (no credentials ever appear in an S3 URL).
  std::string ToString() const;
};

bool IsS3Url(std::string_view path);  // starts with "s3://"

// INVALID_ARGUMENT naming the problem for an empty bucket, a bucket name S3
// does not allow, a bad port.
StatusOr<S3Location> ParseS3Url(std::string_view url);

}  // namespace inferd::s3
