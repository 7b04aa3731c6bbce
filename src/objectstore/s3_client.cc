#include "objectstore/s3_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "objectstore/digest.h"
#include "objectstore/http_transfer.h"
#include "objectstore/s3_xml.h"
#include "objectstore/sigv4.h"

namespace inferd::s3 {
namespace {

// A list page is at most 1000 entries of keys up to 1 KiB each, plus XML.
constexpr uint64_t kMaxListPageBytes = uint64_t{32} * 1024 * 1024;

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Server-provided text in a message: bounded, and no control characters
// (a message may end up in a log line or an HTTP header).
std::string Sanitize(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 300)) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c);
  }
  if (s.size() > 300) out += "...";
  return out;
}

bool IsPlainMd5(std::string_view etag) {
  return etag.size() == 32 && std::all_of(etag.begin(), etag.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// One S3 operation: what to request and how to name it in messages.
struct Op {
  const char* method = "GET";
  bool object = false;  // an object (key) request; a bucket request otherwise
  std::string key;
  sigv4::Params query;
  bool bounded = true;  // the whole-request timeout applies
};

// write(2) all of it, through EINTR and short writes.
Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      std::string m = "writing " + path + ": " + std::strerror(err);
      if (err == ENOSPC || err == EDQUOT) return ResourceExhausted(m);
      return Internal(m);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

struct S3Client::Impl {
  S3Location location;
  ClientOptions options;
  std::string base_host;  // endpoint, or AWS's for the region
  std::string host;       // what Host says: base_host, or <bucket>.<base_host>
  mutable HandlePool pool;

  Impl(S3Location loc, ClientOptions opts) : location(std::move(loc)), options(std::move(opts)) {
    base_host =
        location.endpoint.empty() ? "s3." + options.region + ".amazonaws.com" : location.endpoint;
    host = location.virtual_hosted ? location.bucket + "." + base_host : base_host;
  }

  std::string EndpointUrl() const { return location.scheme + "://" + host; }
  std::string Describe() const {
    std::string out = "s3://";
    if (!location.endpoint.empty()) out += location.scheme + "://" + location.endpoint + "/";
    return out + location.bucket;
  }
  std::string ObjectUrl(const std::string& key) const { return Describe() + "/" + key; }
  std::string Subject(const Op& op) const {
    std::string s = "bucket " + Quoted(location.bucket);
    if (op.object) s += " key " + Quoted(op.key);
    return s;
  }

  Status Precheck() const {
    if (location.virtual_hosted && location.scheme == "https" &&
        location.bucket.find('.') != std::string::npos) {
      return InvalidArgument("bucket " + Quoted(location.bucket) +
                             " has a '.', so it cannot be addressed virtual-hosted over https "
                             "(the server certificate covers one label): use path-style");
    }
    return Status::Ok();
  }

  // Builds, signs and sends the request; the body of a 2xx answer goes to
  // `sink`; any failure comes back as the Status s3_client.h promises.
  Status Run(const Op& op, const BodySink& sink, HttpOutcome* outcome) const {
    INFERD_RETURN_IF_ERROR(Precheck());
    std::string path;
    if (!location.virtual_hosted) path = "/" + sigv4::UriEncode(location.bucket, false);
    if (op.object) {
      path += "/" + sigv4::UriEncode(op.key, false);
    } else if (path.empty()) {
      path = "/";
    }
    sigv4::Request req;
    req.method = op.method;
    req.canonical_uri = path;
    req.canonical_query = sigv4::CanonicalQueryString(op.query);

    HttpRequest http;
    http.method = op.method;
    http.url = EndpointUrl() + path;
    if (!req.canonical_query.empty()) http.url += "?" + req.canonical_query;
    http.headers.push_back("Host: " + host);
    if (!options.credentials.anonymous()) {
      std::string amz_date = sigv4::AmzDate(std::chrono::system_clock::now());
      req.headers = {
          {"host", host}, {"x-amz-content-sha256", req.payload_hash}, {"x-amz-date", amz_date}};
      if (!options.credentials.session_token.empty()) {
        req.headers.emplace_back("x-amz-security-token", options.credentials.session_token);
      }
      for (size_t i = 1; i < req.headers.size(); ++i) {
        http.headers.push_back(req.headers[i].first + ": " + req.headers[i].second);
      }
      http.headers.push_back("Authorization: " +
                             sigv4::Authorize(req, options.credentials, options.region, amz_date));
    }

    TransferOptions transfer;
    transfer.connect_timeout_ms = options.connect_timeout_ms;
    transfer.low_speed_bytes_per_s = options.low_speed_bytes_per_s;
    transfer.low_speed_window_s = options.low_speed_window_s;
    transfer.total_timeout_ms = op.bounded ? options.request_timeout_ms : 0;
    *outcome = pool.Perform(http, transfer, sink);
    return MapOutcome(op, *outcome);
  }

  Status MapOutcome(const Op& op, const HttpOutcome& out) const {
    // An answer's status decides, even when its error body was cut short.
    if (out.http_status >= 300) return MapHttpError(op, out);
    if (!out.sink_status.ok()) return out.sink_status;
    if (out.curl_code == CURLE_OK && out.http_status >= 200) return Status::Ok();
    std::string detail = Sanitize(out.curl_error);
    switch (out.curl_code) {
      case CURLE_PARTIAL_FILE:
        return DataLoss("truncated: got " + std::to_string(out.body_bytes) + " of " +
                        std::to_string(out.content_length) + " bytes of " +
                        (op.object ? ObjectUrl(op.key) : Describe()) + " (" + detail + ")");
      case CURLE_OPERATION_TIMEDOUT:
        if (!out.connected) {
          return Unavailable("cannot connect to " + EndpointUrl() + " for " + Subject(op) + ": " +
                             detail);
        }
        return DeadlineExceeded(std::string(op.method) + " " + Subject(op) + " at " +
                                EndpointUrl() + " timed out: " + detail);
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        return InvalidArgument("bad S3 URL " + EndpointUrl() + ": " + detail);
      default:
        return Unavailable("cannot reach " + EndpointUrl() + " for " + Subject(op) + ": " + detail);
    }
  }

  Status MapHttpError(const Op& op, const HttpOutcome& out) const {
    std::string code, message;
    if (!out.error_body.empty()) {
      auto body = ParseErrorBody(out.error_body);
      if (body.ok()) {
        code = Sanitize(body->code);
        message = Sanitize(body->message);
      }
    }
    std::string detail = "HTTP " + std::to_string(out.http_status);
    if (!code.empty()) detail += " " + code;
    if (!message.empty()) detail += ": " + message;
    std::string at = " at " + EndpointUrl();
    std::string region_hint;
    if (!out.bucket_region.empty() && out.bucket_region != options.region) {
      region_hint = "; the bucket is in region " + Quoted(Sanitize(out.bucket_region)) + ", not " +
                    Quoted(options.region) +
                    ": set AWS_REGION (or AWS_DEFAULT_REGION, or the profile's region)";
    }
    long s = out.http_status;
    if (s == 301 || s == 302 || s == 307 || s == 308) {
      return InvalidArgument("bucket " + Quoted(location.bucket) + " is not served by " +
                             EndpointUrl() + " (" + detail + ")" +
                             (region_hint.empty()
                                  ? "; it probably lives in another region than " +
                                        Quoted(options.region) +
                                        ": set AWS_REGION (or AWS_DEFAULT_REGION, or the profile's "
                                        "region) to the bucket's region"
                                  : region_hint));
    }
    if (s == 403) {
      std::string m = "access denied to " + Subject(op) + at + " (" + detail + ")";
      if (code == "RequestTimeTooSkewed") m += "; check this machine's clock";
      return PermissionDenied(m);
    }
    if (s == 404) {
      bool key_missing = code == "NoSuchKey" || (code.empty() && op.object);
      if (key_missing) {
        return NotFound("object " + Quoted(op.key) + " not found in bucket " +
                        Quoted(location.bucket) + at + " (" + detail + ")");
      }
      if (code == "NoSuchBucket" || code.empty()) {
        return NotFound("bucket " + Quoted(location.bucket) + " not found" + at + " (" + detail +
                        ")");
      }
      return NotFound(Subject(op) + " not found" + at + " (" + detail + ")");
    }
    if (s >= 500) {
      return Unavailable(std::string(kServerErrorMarker) + " from " + EndpointUrl() + " for " +
                         Subject(op) + " (" + detail + ")");
    }
    return InvalidArgument("S3 refused " + std::string(op.method) + " " + Subject(op) + at + " (" +
                           detail + ")" + region_hint);
  }

  // Every page of a ListObjectsV2, handed to `on_page`.
  Status ListPages(const std::string& prefix, bool delimited,
                   const std::function<void(ListPage&)>& on_page) const {
    std::string token;
    std::set<std::string> seen;
    std::string what = "ListObjectsV2 of " + Describe() + " prefix " + Quoted(prefix);
    auto server_error = [&](const std::string& why) {
      return Unavailable(std::string(kServerErrorMarker) + " from " + EndpointUrl() + ": " + what +
                         ": " + why);
    };
    for (;;) {
      Op op;
      op.query = {{"list-type", "2"}, {"prefix", prefix}, {"encoding-type", "url"}};
      if (delimited) op.query.emplace_back("delimiter", "/");
      if (!token.empty()) op.query.emplace_back("continuation-token", token);
      std::string body;
      BodySink sink = [&](const char* data, size_t size) {
        if (body.size() + size > kMaxListPageBytes) return server_error("page too large");
        body.append(data, size);
        return Status::Ok();
      };
      HttpOutcome out;
      INFERD_RETURN_IF_ERROR(Run(op, sink, &out));
      auto page = ParseListBucketResult(body);
      if (!page.ok()) return server_error(page.status().message());
      bool empty = page->contents.empty() && page->common_prefixes.empty();
      bool truncated = page->is_truncated;
      token = page->next_continuation_token;
      on_page(*page);
      if (!truncated) return Status::Ok();
      // A server that says "more" without moving on would loop forever.
      if (token.empty()) return server_error("truncated page without NextContinuationToken");
      if (empty) return server_error("truncated page without any entry");
      if (!seen.insert(token).second) return server_error("continuation token repeated");
    }
  }
};

S3Client::S3Client(S3Location location, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(location), std::move(options))) {}

S3Client::~S3Client() = default;

const S3Location& S3Client::location() const { return impl_->location; }

std::string S3Client::Describe() const { return impl_->Describe(); }

Status S3Client::CheckBucket() const {
  Op op;
  op.method = "HEAD";
  HttpOutcome out;
  return impl_->Run(
      op, [](const char*, size_t) { return Status::Ok(); }, &out);
}

StatusOr<std::vector<ObjectInfo>> S3Client::ListObjects(const std::string& prefix) const {
  std::vector<ObjectInfo> objects;
  INFERD_RETURN_IF_ERROR(impl_->ListPages(prefix, false, [&](ListPage& page) {
    for (ObjectInfo& o : page.contents) objects.push_back(std::move(o));
  }));
  // S3 lists in key order already; a server that does not must not change
  // what callers see.
  std::sort(objects.begin(), objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return objects;
}

StatusOr<std::vector<std::string>> S3Client::ListCommonPrefixes(const std::string& prefix) const {
  std::vector<std::string> prefixes;
  INFERD_RETURN_IF_ERROR(impl_->ListPages(prefix, true, [&](ListPage& page) {
    for (std::string& p : page.common_prefixes) prefixes.push_back(std::move(p));
  }));
  std::sort(prefixes.begin(), prefixes.end());
  return prefixes;
}

StatusOr<std::string> S3Client::GetToString(const std::string& key, uint64_t max_bytes) const {
  Op op;
  op.object = true;
  op.key = key;
  std::string body;
  BodySink sink = [&](const char* data, size_t size) {
    if (body.size() + size > max_bytes) {
      return ResourceExhausted(impl_->ObjectUrl(key) + " is larger than the " +
                               std::to_string(max_bytes) + " bytes allowed");
    }
    body.append(data, size);
    return Status::Ok();
  };
  HttpOutcome out;
  INFERD_RETURN_IF_ERROR(impl_->Run(op, sink, &out));
  return body;
}

Status S3Client::GetToFile(const ObjectInfo& expected, const std::string& path) const {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("cannot create " + path + ": " + std::strerror(errno));
  const std::string url = impl_->ObjectUrl(expected.key);
  Md5 md5;
  uint64_t got = 0;
  BodySink sink = [&](const char* data, size_t size) {
    if (got + size > expected.size) {
      return DataLoss(url + " is longer than the " + std::to_string(expected.size) +
                      " bytes it was listed with (changed since?)");
    }
    INFERD_RETURN_IF_ERROR(WriteAll(fd, data, size, path));
    md5.Update(data, size);
    got += size;
    return Status::Ok();
  };
  Op op;
  op.object = true;
  op.key = expected.key;
  op.bounded = false;  // any size: the low-speed limit bounds the wait
  HttpOutcome out;
  Status status = impl_->Run(op, sink, &out);
  // close() reports late write errors (NFS, quotas).
  if (::close(fd) != 0 && status.ok()) {
    int err = errno;
    std::string m = "writing " + path + ": " + std::strerror(err);
    status = err == ENOSPC || err == EDQUOT ? ResourceExhausted(m) : Internal(m);
  }
  if (!status.ok()) return status;
  if (got != expected.size) {
    return DataLoss("truncated: got " + std::to_string(got) + " of " +
                    std::to_string(expected.size) + " bytes of " + url);
  }
  if (IsPlainMd5(expected.etag) && !out.etag_not_md5) {
    std::string actual = md5.FinalHex();
    if (actual != Lower(expected.etag)) {
      return DataLoss("MD5 of " + url + " is " + actual + " but its ETag is " + expected.etag +
                      ": corrupt download");
    }
  }
  return Status::Ok();
}

StatusOr<ObjectInfo> S3Client::HeadObject(const std::string& key) const {
  Op op;
  op.method = "HEAD";
  op.object = true;
  op.key = key;
  HttpOutcome out;
  INFERD_RETURN_IF_ERROR(impl_->Run(
      op, [](const char*, size_t) { return Status::Ok(); }, &out));
  if (out.content_length < 0) {
    return Unavailable(std::string(kServerErrorMarker) + " from " + impl_->EndpointUrl() +
                       ": HEAD " + impl_->ObjectUrl(key) + " answered without Content-Length");
  }
  return ObjectInfo{key, static_cast<uint64_t>(out.content_length), Unquote(out.etag)};
}

}  // namespace inferd::s3
