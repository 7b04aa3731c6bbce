// XdsSnapshot: every xDS resource the control plane serves at one moment,
// by type and name, already serialized. The snapshot builder makes one
// from what the prober knows; the ADS server pushes it to every stream.
//
// Ownership: immutable once built; shared as shared_ptr<const XdsSnapshot>
// between the builder, the ADS server's streams and the debug endpoint.
// Threading: read-only, so any thread may read it.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace inferd::discovery {

// The four resource types served (xDS type URLs; exact strings).
inline constexpr std::string_view kListenerType =
    "type.googleapis.com/envoy.config.listener.v3.Listener";
inline constexpr std::string_view kRouteConfigurationType =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
inline constexpr std::string_view kClusterType =
    "type.googleapis.com/envoy.config.cluster.v3.Cluster";
inline constexpr std::string_view kClusterLoadAssignmentType =
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

struct XdsResource {
  std::string bytes;  // the serialized resource message (not wrapped in Any)
  // Whether a wildcard subscription (Envoy's LDS/CDS) selects it. API
  // listeners, which only proxyless gRPC clients can use, are served only
  // to clients that name them.
  bool in_wildcard = true;

  bool operator==(const XdsResource&) const = default;
};

// Resource name -> resource, for one type.
using XdsResourceMap = std::map<std::string, XdsResource, std::less<>>;

struct XdsSnapshot {
  // Type URL -> resources of that type. A type absent here has no resources.
  std::map<std::string, XdsResourceMap, std::less<>> resources;

  // The resources of `type_url` (an empty map when there are none).
  const XdsResourceMap& Of(std::string_view type_url) const {
    static const XdsResourceMap kNone;
    auto it = resources.find(type_url);
    return it == resources.end() ? kNone : it->second;
  }
};

}  // namespace inferd::discovery
