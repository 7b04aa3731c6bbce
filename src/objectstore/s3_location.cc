#include "objectstore/s3_location.h"

#include <cctype>
#include <vector>

namespace inferd::s3 {
namespace {

constexpr std::string_view kS3 = "s3://";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || IsDigit(c); }

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

Status CheckPort(std::string_view port, std::string_view url) {
  bool ok = !port.empty() && port.size() <= 5;
  int value = 0;
  for (char c : port) {
    if (!IsDigit(c)) ok = false;
    value = value * 10 + (c - '0');
  }
  if (!ok || value < 1 || value > 65535) {
    return InvalidArgument("bad port " + Quoted(port) + " in " + Quoted(url));
  }
  return Status::Ok();
}

// "host:port", "[v6]:port", or without ":port" when the scheme was explicit.
Status CheckEndpoint(std::string_view endpoint, bool port_required, std::string_view url) {
  if (endpoint.find('@') != std::string_view::npos) {
    // The URL is not repeated: it holds a password.
    return InvalidArgument(
        "credentials do not belong in an s3:// URL (user@host): use "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile");
  }
  std::string_view host = endpoint;
  std::string_view port;
  bool has_port = false;
  if (!endpoint.empty() && endpoint.front() == '[') {
    size_t close = endpoint.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unclosed '[' in " + Quoted(url));
    host = endpoint.substr(1, close - 1);
    std::string_view after = endpoint.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("bad endpoint in " + Quoted(url));
      has_port = true;
      port = after.substr(1);
    }
    for (char c : host) {
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')) {
        return InvalidArgument("bad IPv6 address " + Quoted(host) + " in " + Quoted(url));
      }
    }
  } else {
    size_t colon = endpoint.find(':');
    if (colon != std::string_view::npos) {
      host = endpoint.substr(0, colon);
      port = endpoint.substr(colon + 1);
      has_port = true;
    }
    for (char c : host) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) {
        return InvalidArgument("bad host name " + Quoted(host) + " in " + Quoted(url));
      }
    }
  }
  if (host.empty()) return InvalidArgument("no host name in " + Quoted(url));
  if (has_port) return CheckPort(port, url);
  if (port_required) return InvalidArgument("no port in " + Quoted(url));
  return Status::Ok();
}

Status CheckBucket(std::string_view bucket, std::string_view url) {
  bool ok = bucket.size() >= 3 && bucket.size() <= 63 && IsLowerAlnum(bucket.front()) &&
            IsLowerAlnum(bucket.back());
  for (char c : bucket) {
    if (!(IsLowerAlnum(c) || c == '.' || c == '-')) ok = false;
  }
  if (!ok) {
    return InvalidArgument("invalid bucket name " + Quoted(bucket) + " in " + Quoted(url) +
                           ": S3 bucket names are 3 to 63 lower-case letters, digits, '.' and "
                           "'-', beginning and ending with a letter or digit");
  }
  return Status::Ok();
}

}  // namespace

std::string S3Location::ToString() const {
  std::string out(kS3);
  if (!endpoint.empty()) out += scheme + "://" + endpoint + "/";
  out += bucket;
  if (!prefix.empty()) out += "/" + prefix;
  return out;
}

bool IsS3Url(std::string_view path) { return path.substr(0, kS3.size()) == kS3; }

StatusOr<S3Location> ParseS3Url(std::string_view url) {
  if (!IsS3Url(url)) return InvalidArgument("not an s3:// URL: " + Quoted(url));
  std::string_view rest = url.substr(kS3.size());
  S3Location loc;
  bool explicit_scheme = false;
  for (std::string_view scheme : {"http", "https"}) {
    std::string with_sep = std::string(scheme) + "://";
    if (rest.substr(0, with_sep.size()) == with_sep) {
      loc.scheme = std::string(scheme);
      explicit_scheme = true;
      rest.remove_prefix(with_sep.size());
    }
  }
  // Components without the empty ones: leading, trailing and repeated '/'
  // go, as in Triton's CleanPath.
  std::vector<std::string_view> parts;
  while (!rest.empty()) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  size_t i = 0;
  if (!parts.empty() && (explicit_scheme || parts[0].find(':') != std::string_view::npos ||
                         parts[0].front() == '[')) {
    INFERD_RETURN_IF_ERROR(CheckEndpoint(parts[0], !explicit_scheme, url));
    loc.endpoint = std::string(parts[0]);
    if (!explicit_scheme) loc.scheme = "http";
    i = 1;
  }
  if (i >= parts.size()) return InvalidArgument("no bucket name in " + Quoted(url));
  INFERD_RETURN_IF_ERROR(CheckBucket(parts[i], url));
  loc.bucket = std::string(parts[i]);
  for (++i; i < parts.size(); ++i) {
    if (!loc.prefix.empty()) loc.prefix += '/';
    loc.prefix += parts[i];
  }
  return loc;
}

}  // namespace inferd::s3
