// S3Location: an s3:// model repository path, parsed as Triton parses it
// (docs/PROTOCOL-NEXT §7.1), plus inferd's virtual-hosted option.
//
//   s3://bucket/prefix                    AWS, https, region's endpoint
//   s3://host:port/bucket/prefix          custom endpoint, http
//   s3://http://host:port/bucket/prefix   same, explicit
//   s3://https://host:port/bucket/prefix  custom endpoint, https
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
