// The Kubernetes API's EndpointSlice JSON (discovery.k8s.io/v1) -> host
// endpoints: the body of a list, and one line of a watch stream. Only the
// fields discovery needs are read; everything else is ignored.
//
// Which endpoints count (the decisions):
//   - conditions.ready true or absent: ready; false: skipped.
//   - conditions.terminating true: skipped even when ready says true (a
//     Service with publishNotReadyAddresses reports terminating pods as
//     ready). inferd turns not-ready when it drains after SIGTERM anyway,
//     and the prober checks readiness; a terminating pod gets no new hosts.
//   - addressType IPv4 and IPv6 only: an FQDN slice's addresses are names,
//     which proxyless gRPC cannot use in EDS; such a slice has no endpoints.
//   - the port: KubePort::number when non-zero (the flag gave a number),
//     else the slice's ports[] entry whose name is KubePort::name; a slice
//     without that name has no endpoints.
//
// Pure functions; thread-safe. Errors: INVALID_ARGUMENT when the text is
// not JSON or not the expected shape (what is wrong, never the whole text).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"
#include "discovery/host_source.h"

namespace inferd::discovery {

struct KubePort {
  uint16_t number = 0;  // used when non-zero
  std::string name;     // else: the ports[] entry of this name
};

// EndpointSlice name -> its ready endpoints.
using SliceMap = std::map<std::string, HostSet>;

struct SliceList {
  std::string resource_version;  // the list's metadata.resourceVersion
  SliceMap slices;
};

StatusOr<SliceList> ParseEndpointSliceList(std::string_view body, const KubePort& port);

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kError;
  std::string resource_version;  // the object's metadata.resourceVersion (not ERROR)
  std::string slice_name;        // ADDED, MODIFIED, DELETED
  HostSet endpoints;             // ADDED, MODIFIED
  int error_code = 0;            // ERROR: the Status object's code (410: too old)
  std::string error_message;     // ERROR: its message
};

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, const KubePort& port);

// The union of every slice's endpoints.
HostSet UnionOfSlices(const SliceMap& slices);

}  // namespace inferd::discovery
