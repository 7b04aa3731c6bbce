#include "objectstore/object_store.h"

namespace inferd::s3 {

const char* S3ErrorKindName(S3ErrorKind kind) {
  switch (kind) {
    case S3ErrorKind::kNone:
      return "none";
    case S3ErrorKind::kUnreachable:
      return "unreachable";
    case S3ErrorKind::kTimeout:
      return "timeout";
    case S3ErrorKind::kAccessDenied:
      return "access_denied";
    case S3ErrorKind::kNotFound:
      return "not_found";
    case S3ErrorKind::kTruncated:
      return "truncated";
    case S3ErrorKind::kServer:
      return "server";
    case S3ErrorKind::kOther:
      return "other";
  }
  return "other";
}

S3ErrorKind KindOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return S3ErrorKind::kNone;
    case StatusCode::kDeadlineExceeded:
      return S3ErrorKind::kTimeout;
    case StatusCode::kPermissionDenied:
      return S3ErrorKind::kAccessDenied;
    case StatusCode::kNotFound:
      return S3ErrorKind::kNotFound;
    case StatusCode::kDataLoss:
      return S3ErrorKind::kTruncated;
    case StatusCode::kUnavailable:
      // One code for "no answer" and "a 5xx answer" (both retryable); the
      // message tells them apart for the metric.
      return status.message().find(kServerErrorMarker) != std::string::npos
                 ? S3ErrorKind::kServer
                 : S3ErrorKind::kUnreachable;
    default:
      return S3ErrorKind::kOther;
  }
}

}  // namespace inferd::s3
