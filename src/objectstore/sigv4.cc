#include "objectstore/sigv4.h"

#include <algorithm>
#include <ctime>

#include "objectstore/digest.h"

namespace inferd::s3::sigv4 {
namespace {

bool Unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::string UriEncode(std::string_view s, bool encode_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (Unreserved(c) || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

bool UriDecode(std::string_view s, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return false;
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

std::string CanonicalQueryString(const Params& params) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(params.size());
  for (const auto& [name, value] : params) {
    encoded.emplace_back(UriEncode(name, true), UriEncode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string CanonicalHeaderValue(std::string_view value) {
  std::string out;
  bool pending_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

Canonical CanonicalRequest(const Request& request) {
  // Sorted by lower-case name; a repeated name's values comma-joined in the
  // order given (AWS's rule for multi-valued headers).
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : request.headers) {
    std::string lname = Lower(name);
    std::string v = CanonicalHeaderValue(value);
    auto it = std::find_if(headers.begin(), headers.end(),
                           [&](const auto& h) { return h.first == lname; });
    if (it == headers.end()) {
      headers.emplace_back(std::move(lname), std::move(v));
    } else {
      it->second += ',' + v;
    }
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  Canonical c;
  c.request = request.method + '\n' + request.canonical_uri + '\n' + request.canonical_query + '\n';
  for (const auto& [name, value] : headers) {
    c.request += name + ':' + value + '\n';
    if (!c.signed_headers.empty()) c.signed_headers.push_back(';');
    c.signed_headers += name;
  }
  c.request += '\n' + c.signed_headers + '\n' + request.payload_hash;
  return c;
}

std::string AmzDate(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string Scope(std::string_view amz_date, std::string_view region) {
  return std::string(amz_date.substr(0, 8)) + '/' + std::string(region) + "/s3/aws4_request";
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + '\n' + std::string(scope) + '\n' +
         Sha256Hex(canonical_request);
}

std::string SigningKey(std::string_view secret, std::string_view amz_date,
                       std::string_view region) {
  std::string k_date = HmacSha256("AWS4" + std::string(secret), amz_date.substr(0, 8));
  std::string k_region = HmacSha256(k_date, region);
  std::string k_service = HmacSha256(k_region, "s3");
  return HmacSha256(k_service, "aws4_request");
}

std::string Signature(std::string_view signing_key, std::string_view string_to_sign) {
  return HexLower(HmacSha256(signing_key, string_to_sign));
}

std::string Authorize(const Request& request, const AwsCredentials& credentials,
                      std::string_view region, std::string_view amz_date) {
  Canonical canonical = CanonicalRequest(request);
  std::string scope = Scope(amz_date, region);
  std::string signature = Signature(SigningKey(credentials.secret_access_key, amz_date, region),
                                    StringToSign(amz_date, scope, canonical.request));
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + '/' + scope +
         ", SignedHeaders=" + canonical.signed_headers + ", Signature=" + signature;
}

}  // namespace inferd::s3::sigv4
