#include <arpa/inet.h>

#include <cctype>
#include <string>

#include "core/sanitize.h"
#include "discovery/host_list.h"
#include "discovery/host_source.h"

namespace inferd::discovery {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Status Bad(std::string_view text, std::string_view why) {
  return InvalidArgument("host endpoint '" + Bounded(text) + "': " + std::string(why) +
                         " (expected HOST:PORT or [IPV6]:PORT)");
}

// Port text -> 1..65535, or 0 when it is not a port.
uint16_t ParsePort(std::string_view s) {
  if (s.empty() || s.size() > 5) return 0;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v <= 65535 ? static_cast<uint16_t>(v) : 0;
}

bool ValidName(std::string_view host) {
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) {
      return false;
    }
  }
  return true;
}

bool ValidIpv6(std::string_view host) {
  // A zone ("fe80::1%eth0") is allowed after the address.
  std::string address(host.substr(0, host.find('%')));
  in6_addr out{};
  return ::inet_pton(AF_INET6, address.c_str(), &out) == 1;
}

}  // namespace

std::string HostEndpoint::id() const {
  std::string port_text = std::to_string(port);
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port_text;
  return host + ":" + port_text;
}

StatusOr<HostEndpoint> ParseHostEndpoint(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty()) return Bad(text, "empty");
  HostEndpoint e;
  std::string_view port_text;
  if (t.front() == '[') {
    size_t close = t.find(']');
    if (close == std::string_view::npos) return Bad(text, "no ']' after an IPv6 address");
    std::string_view host = t.substr(1, close - 1);
    if (host.empty()) return Bad(text, "empty host");
    if (!ValidIpv6(host)) return Bad(text, "not an IPv6 address in brackets");
    std::string_view rest = t.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return Bad(text, "no port");
    e.host = std::string(host);
    port_text = rest.substr(1);
  } else {
    size_t colon = t.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "no port");
    std::string_view host = t.substr(0, colon);
    if (host.find(':') != std::string_view::npos) {
      return Bad(text, "an IPv6 address needs brackets");
    }
    if (host.empty()) return Bad(text, "empty host");
    if (!ValidName(host)) return Bad(text, "the host has characters a host name cannot have");
    e.host = std::string(host);
    port_text = t.substr(colon + 1);
  }
  if (port_text.empty()) return Bad(text, "no port");
  e.port = ParsePort(port_text);
  if (e.port == 0) return Bad(text, "the port must be a number from 1 to 65535");
  return e;
}

StatusOr<HostSet> ParseHostList(std::string_view text) {
  if (Trim(text).empty()) return InvalidArgument("empty host list");
  HostSet set;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = Trim(text.substr(start, comma - start));
    if (item.empty()) {
      return InvalidArgument("host list '" + Bounded(text) + "': empty entry");
    }
    StatusOr<HostEndpoint> e = ParseHostEndpoint(item);
    if (!e.ok()) return e.status();
    set.insert(*std::move(e));
    start = comma + 1;
  }
  return set;
}

StatusOr<HostSet> ParseHostsFileContent(std::string_view content) {
  HostSet set;
  size_t line_number = 0;
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++line_number;
    line = Trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    StatusOr<HostEndpoint> e = ParseHostEndpoint(line);
    if (!e.ok()) return e.status().WithPrefix("line " + std::to_string(line_number));
    set.insert(*std::move(e));
  }
  return set;
}

}  // namespace inferd::discovery
