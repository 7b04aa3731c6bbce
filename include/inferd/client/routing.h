// inferd::client routing helpers: how a gRPC call tells a proxy or an xDS
// client which model it is for, so that it reaches a host serving it.
//
// inferd-discovery's RouteConfiguration (and Envoy fed by it) sends a call
// carrying the metadata `inferd-model: <model>` to the cluster of the hosts
// where that model is READY, and every other call to the whole fleet.
// libinferclient's GrpcClient and infer-gateway's InferdPool add the header
// to every model-scoped call (docs/decisions.md, "inferd-model on every
// model-scoped gRPC call").
//
// Header-only and free of gRPC types: the server-side tools (infer-gateway)
// include it without linking libinferclient.
#pragma once

#include <string_view>

namespace inferd::client {

// The metadata key (lower case, as gRPC wants it). The same name as
// inferd::discovery::kModelHeader; a unit test holds them together.
inline constexpr char kModelHeader[] = "inferd-model";

// Whether `target` names a gRPC xDS target ("xds:///fleet", or with an
// authority "xds://authority/fleet"): gRPC resolves it through the control
// plane named by the bootstrap file in $GRPC_XDS_BOOTSTRAP.
inline bool IsXdsTarget(std::string_view target) { return target.starts_with("xds:"); }

// Whether `model` can travel as the header's value: non-empty printable
// ASCII (gRPC refuses other bytes in text metadata). Calls for a model whose
// name cannot go without the header and reach the fleet's hosts.
inline bool IsRoutableModelName(std::string_view model) {
  if (model.empty()) return false;
  for (const char c : model) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) return false;
  }
  return true;
}

}  // namespace inferd::client
