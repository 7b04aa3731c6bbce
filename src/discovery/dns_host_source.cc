#include "discovery/dns_host_source.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

namespace inferd::discovery {

DnsAnswer SystemResolve(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &result);
  DnsAnswer answer;
  if (rc != 0) {
    bool no_such_name = rc == EAI_NONAME;
#ifdef EAI_NODATA
    no_such_name = no_such_name || rc == EAI_NODATA;
#endif
    answer.kind = no_such_name ? DnsAnswer::Kind::kNoSuchName : DnsAnswer::Kind::kTransient;
    answer.error = ::gai_strerror(rc);
    return answer;
  }
  answer.kind = DnsAnswer::Kind::kAddresses;
  for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {0};
    const void* address = nullptr;
    if (a->ai_family == AF_INET) {
      address = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
    } else if (a->ai_family == AF_INET6) {
      address = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
    } else {
      continue;
    }
    if (::inet_ntop(a->ai_family, address, text, sizeof text) != nullptr) {
      answer.addresses.emplace_back(text);
    }
  }
  ::freeaddrinfo(result);
  return answer;
}

std::optional<HostSet> DnsHostSource::Poll() {
  DnsAnswer answer = resolver_(target_.host);
  switch (answer.kind) {
    case DnsAnswer::Kind::kNoSuchName:
      health().Note("no such name " + target_.host + " (" + answer.error + "): reporting no hosts");
      return HostSet();
    case DnsAnswer::Kind::kTransient:
      health().Fail("cannot resolve " + target_.host + ": " + answer.error);
      return std::nullopt;
    case DnsAnswer::Kind::kAddresses:
      break;
  }
  HostSet set;
  for (const std::string& address : answer.addresses) {
    // Only IP literals: anything else (an injected resolver's mistake) is a
    // failure, not a host.
    in6_addr scratch{};
    if (::inet_pton(AF_INET, address.c_str(), &scratch) != 1 &&
        ::inet_pton(AF_INET6, address.c_str(), &scratch) != 1) {
      health().Fail("resolver answered '" + address + "', not an IP address");
      return std::nullopt;
    }
    set.insert(HostEndpoint{address, target_.port});
  }
  health().Recovered();
  return set;
}

}  // namespace inferd::discovery
