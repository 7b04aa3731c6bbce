// DnsHostSource: NAME:PORT, re-resolved every interval; every A and AAAA
// record becomes an endpoint whose host is the IP literal (proxyless gRPC
// clients need IP addresses in EDS, and a headless Service's name has one
// record per ready pod).
//
// What an answer means:
//   addresses              the set (deduplicated)
//   no such name           (EAI_NONAME, EAI_NODATA: NXDOMAIN or no A/AAAA
//                          record) an authoritative answer: the set is now
//                          EMPTY. A headless Service with no ready pod
//                          answers exactly this; keeping the last set would
//                          route to pods that are gone. Logged once as a
//                          warning (a misspelt name shows), not counted as
//                          an error: it is an answer, not a failure to get one.
//   anything else          (EAI_AGAIN, EAI_FAIL, a resolver that cannot be
//                          reached) transient: the last good set stays, an
//                          error is counted and the reason logged once.
//
// The resolver is injected (tests feed changing answers); the default is
// SystemResolve (getaddrinfo, blocking, on the source's thread).
// Ownership/threading: PollingHostSource (one thread; callback on it).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "discovery/polling_host_source.h"

namespace inferd::discovery {

struct DnsAnswer {
  enum class Kind { kAddresses, kNoSuchName, kTransient };
  Kind kind = Kind::kTransient;
  std::vector<std::string> addresses;  // IP literals (kAddresses)
  std::string error;                   // what the resolver said, otherwise
};

// name -> answer. Called on the source's thread only.
using DnsResolver = std::function<DnsAnswer(const std::string& name)>;

// getaddrinfo(name, AF_UNSPEC, SOCK_STREAM), addresses as inet_ntop text.
DnsAnswer SystemResolve(const std::string& name);

class DnsHostSource final : public PollingHostSource {
 public:
  // `target`: the name and the port every address gets.
  DnsHostSource(HostEndpoint target, std::chrono::milliseconds interval,
                DnsResolver resolver = SystemResolve)
      : PollingHostSource("dns:" + target.id(), interval),
        target_(std::move(target)),
        resolver_(std::move(resolver)) {}
  ~DnsHostSource() override { Stop(); }

 protected:
  std::optional<HostSet> Poll() override;

 private:
  const HostEndpoint target_;
  const DnsResolver resolver_;
};

}  // namespace inferd::discovery
