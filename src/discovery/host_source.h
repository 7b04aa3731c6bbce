// HostSource: where inferd-discovery learns which inferd hosts exist. Each
// source reports the complete set of endpoints it currently knows (never a
// delta), every time that set changes; the discovery service takes the
// union over its sources.
//
// Implementations: a static list, a file reloaded on change, a DNS name
// re-resolved periodically, and a Kubernetes Service's EndpointSlices
// (host_sources.h).
//
// Threading: Start once; the callback runs on the source's own thread (or
// the caller's, for a static list), never concurrently with itself for one
// source. Stop joins that thread; no callback runs after Stop returns.
// Errors: a source that cannot read its input (file missing, DNS failure,
// API server down) keeps its last good set, logs the reason once per change
// of reason, and counts it in `errors()`; it never throws.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd::discovery {

// One inferd gRPC endpoint: a host (an IP literal or a name) and a port.
struct HostEndpoint {
  std::string host;
  uint16_t port = 0;

  // "host:port", with IPv6 literals in brackets: the host's id everywhere
  // (logs, metrics, locality sub-zone, the snapshot dump).
  std::string id() const;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy's false positive on a defaulted <=>
  auto operator<=>(const HostEndpoint&) const = default;
};

// "HOST:PORT" or "[V6]:PORT" -> endpoint; INVALID_ARGUMENT naming the text
// and what is wrong with it (no port, port 0 or > 65535, empty host).
StatusOr<HostEndpoint> ParseHostEndpoint(std::string_view text);

using HostSet = std::set<HostEndpoint>;

class HostSource {
 public:
  using OnChange = std::function<void(const HostSet&)>;
  virtual ~HostSource() = default;

  // A short description for logs and the snapshot dump, e.g. "file:/etc/h".
  virtual std::string name() const = 0;
  // Starts watching; `on_change` gets the first complete set as soon as it
  // is known, then every changed set.
  virtual void Start(OnChange on_change) = 0;
  virtual void Stop() = 0;
  // Failures to read the source so far (metrics).
  virtual uint64_t errors() const = 0;
};

}  // namespace inferd::discovery
