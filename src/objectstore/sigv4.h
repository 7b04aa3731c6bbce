// AWS Signature Version 4 for S3, header-based, single chunk
// (docs/PROTOCOL-NEXT §7.3): URI encoding, the canonical request, the string
// to sign, the signing key and the Authorization header. Internal to
// src/objectstore/ (S3Client signs with it; its tests verify requests with
// it).
//
// Threading: pure functions. Errors: none (UriDecode reports malformed
// input by returning false). Nothing here logs; the results that embed a
// secret-derived value (SigningKey, Signature, Authorize) must never be put
// in a message.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "objectstore/aws_credentials.h"

namespace inferd::s3::sigv4 {

// SHA-256 of the empty body: the x-amz-content-sha256 of every request the
// client sends (GET and HEAD have no body).
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// Every byte but A-Z a-z 0-9 - . _ ~ as %XY (upper-case hex); '/' kept when
// !encode_slash (paths), encoded otherwise (query names and values).
std::string UriEncode(std::string_view s, bool encode_slash);

// %XY decoding (either case); with plus_is_space also '+' -> ' ' (S3's
// encoding-type=url writes spaces as '+', as HTML forms do). False on a '%'
// not followed by two hex digits.
bool UriDecode(std::string_view s, bool plus_is_space, std::string* out);

// Query parameters, raw (not encoded); a parameter without a value has "".
using Params = std::vector<std::pair<std::string, std::string>>;

// enc(name)=enc(value) sorted by encoded name then value, '&'-joined. The
// client sends exactly this string as the URL's query, so what is signed is
// what is sent.
std::string CanonicalQueryString(const Params& params);

// A header value as signed: leading/trailing spaces and tabs removed, inner
// runs of them collapsed to one space.
std::string CanonicalHeaderValue(std::string_view value);

struct Request {
  std::string method;           // "GET", "HEAD"
  std::string canonical_uri;    // already encoded: "/bucket/key%20name"
  std::string canonical_query;  // CanonicalQueryString(...) or ""
  // Headers to sign, names in any case; a name given twice is comma-joined.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash = std::string(kEmptyPayloadSha256);
};

struct Canonical {
  std::string request;         // the six lines
  std::string signed_headers;  // "host;x-amz-content-sha256;x-amz-date"
};
Canonical CanonicalRequest(const Request& request);

// "20130524T000000Z" (UTC).
std::string AmzDate(std::chrono::system_clock::time_point t);
// "<YYYYMMDD>/<region>/s3/aws4_request"; amz_date as AmzDate returns.
std::string Scope(std::string_view amz_date, std::string_view region);
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
// kSigning (32 raw bytes).
std::string SigningKey(std::string_view secret, std::string_view amz_date, std::string_view region);
// Lower-case hex HMAC(kSigning, string_to_sign).
std::string Signature(std::string_view signing_key, std::string_view string_to_sign);

// The Authorization header value for `request`, whose headers already hold
// host, x-amz-date (== amz_date), x-amz-content-sha256 and, with a session
// token, x-amz-security-token: "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=...".
std::string Authorize(const Request& request, const AwsCredentials& credentials,
                      std::string_view region, std::string_view amz_date);

}  // namespace inferd::s3::sigv4
