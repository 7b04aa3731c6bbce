// ObjectStore: the object-storage operations a remote model repository
// needs, independent of the protocol. S3Client (s3_client.h) implements it
// for S3 (AWS, Ceph RGW, MinIO); the repository source above it
// (src/repository/s3_repository_source.*) and its unit tests (an in-memory
// store) see only this interface.
//
// Threading: implementations allow concurrent calls from any thread.
// Errors: as s3_client.h lists them (kNotFound, kPermissionDenied,
// kUnavailable, kDeadlineExceeded, kDataLoss, kResourceExhausted,
// kInvalidArgument); messages name the bucket and key, never a credential.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace inferd::s3 {

// One object as a listing or a HEAD reports it.
struct ObjectInfo {
  std::string key;  // full key, decoded (no URL or XML escapes)
  uint64_t size = 0;
  std::string etag;  // without quotes: "fba9dede5f27731c9771645a39863328" or "...-3"
};

// Why a call failed, for the errors-by-kind metric (object_store.cc).
enum class S3ErrorKind {
  kNone,
  kUnreachable,
  kTimeout,
  kAccessDenied,
  kNotFound,
  kTruncated,
  kServer,
  kOther
};
const char* S3ErrorKindName(S3ErrorKind kind);  // "unreachable", "timeout", ...
S3ErrorKind KindOf(const Status& status);       // from the code above (kTimeout: kDeadlineExceeded)
// KindOf's table: OK -> kNone; kDeadlineExceeded -> kTimeout;
// kPermissionDenied -> kAccessDenied; kNotFound -> kNotFound; kDataLoss ->
// kTruncated; kUnavailable -> kServer when the message contains
// kServerErrorMarker (the store answered 5xx or nonsense), kUnreachable
// otherwise (no answer: refused, reset, DNS, TLS, connect timeout);
// anything else -> kOther. Another ObjectStore (a test fake) that wants
// kServer puts the marker in its message too.
inline constexpr const char* kServerErrorMarker = "server error";

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // "s3://[scheme://host:port/]bucket" for messages and logs.
  virtual std::string Describe() const = 0;

  // The bucket exists and may be read: OK, or the error (a missing bucket
  // is kNotFound naming the bucket and the endpoint).
  virtual Status CheckBucket() const = 0;

  // Every object whose key starts with `prefix`, following continuation
  // tokens (any number of pages), in key order; the whole subtree (no
  // delimiter). Directory markers (keys ending in '/') are included.
  virtual StatusOr<std::vector<ObjectInfo>> ListObjects(const std::string& prefix) const = 0;

  // The common prefixes directly below `prefix` (delimiter '/'), each
  // ending in '/', every page followed.
  virtual StatusOr<std::vector<std::string>> ListCommonPrefixes(
      const std::string& prefix) const = 0;

  // The whole object in memory; kResourceExhausted when larger than
  // `max_bytes`.
  virtual StatusOr<std::string> GetToString(const std::string& key, uint64_t max_bytes) const = 0;

  // The object streamed into `path` (created or truncated; never held in
  // memory), then verified: exactly `expected.size` bytes, and the data's
  // MD5 equal to `expected.etag` when that ETag is a plain MD5 (32 hex
  // digits, no "-N" multipart suffix, and S3 does not say the object is
  // SSE-KMS or SSE-C encrypted, whose ETags are not MD5s); kDataLoss otherwise. On failure
  // `path` may hold a partial file: callers write to a temporary name and
  // rename.
  virtual Status GetToFile(const ObjectInfo& expected, const std::string& path) const = 0;
};

}  // namespace inferd::s3
