// AdsServer: the xDS v3 Aggregated Discovery Service, state-of-the-world
// variant (envoy.service.discovery.v3.AggregatedDiscoveryService/
// StreamAggregatedResources), serving the resources of the latest
// XdsSnapshot to Envoy and to proxyless gRPC clients
// (docs: PROTOCOL-NEXT §5.5).
//
//   AdsServer ads({.control_plane_id = "inferd-discovery-1"});
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&ads);
//   auto server = builder.BuildAndStart();
//   ads.Publish(snapshot);                 // again whenever hosts change
//   ...
//   ads.Shutdown();                        // finishes every stream
//   server->Shutdown(deadline);            // then stop gRPC
//
// Protocol (per stream, per type URL, each type its own sub-stream with
// its own version and nonce):
// - The first message's `node` names the client (id, user agent; logged,
//   listed by Stats). A request without `type_url` ends the stream with
//   INVALID_ARGUMENT (ADS needs it; a client that omits it is broken, and a
//   clear error beats silence).
// - Versions are content-based: 16 hex digits of a hash of the type's
//   resources (names, bytes, wildcard flags), the same across restarts for
//   the same content. A Publish that changes nothing sends nothing.
// - Nonces are fresh per response (a counter per stream). A request whose
//   response_nonce is not the latest sent for its type is stale and ignored
//   (its successor carries the full subscription again).
// - ACK (latest nonce, no error_detail) records version_info as accepted.
//   NACK (latest nonce, error_detail present) is logged as a warning with the
//   node id, type, rejected version and the client's message, and counted;
//   the rejected content counts as sent, so it is not sent again: the next
//   response for that type comes when the content or the subscription
//   changes (no NACK loop).
// - Subscriptions: each request carries the full set of names. Listener and
//   Cluster have wildcard (empty names on the stream's first request for the
//   type — and every later empty list while nothing was named — or the name
//   "*"), which selects resources with in_wildcard == true. Their responses
//   are complete (a resource left out is deleted). RouteConfiguration,
//   ClusterLoadAssignment and any other type send the subscribed resources
//   that exist, all of them each time something new is to be said.
// - A response goes out when what the stream selects differs from what it
//   was last sent, or (Listener, Cluster) when its subscription changed.
//   Names that do not exist yet are remembered and sent once published.
//   Nothing is sent before the first Publish. A new stream whose first
//   wildcard Listener/Cluster request carries the current version gets no
//   response for it (it has that content).
// - Order when several types are due: Cluster, ClusterLoadAssignment,
//   Listener, RouteConfiguration (make before break), then any other.
//
// Writes: one write at a time per stream. Publish only marks types due;
// each stream builds its next response from the latest snapshot when its
// previous write completes, so a slow reader gets the latest content per
// type, never a queue, and never delays Publish or other streams. gRPC's
// server sends messages of any size by default (clients receive at most
// 4 MiB by default: a larger response is logged as a warning).
//
// Ownership: the service object must outlive the grpc::Server it is
// registered with. Streams share state with it (not a pointer to it), so a
// stream ending at any moment is safe.
// Threading: every public method is safe from any thread and never blocks
// on a client. Reactions run on gRPC's threads and never block.
// Shutdown: Shutdown() (also run by the destructor) refuses new streams,
// finishes idle ones with UNAVAILABLE and cancels any with a write in
// flight (a client that does not read would otherwise hold its stream
// open), so grpc::Server::Shutdown returns promptly afterwards.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "discovery/xds_snapshot.h"
#include "envoy_discovery.grpc.pb.h"

namespace inferd::discovery {

struct AdsServerOptions {
  // DiscoveryResponse.control_plane.identifier.
  std::string control_plane_id = "inferd-discovery";
};

// Counters of one type URL, since the server started.
struct AdsTypeCounters {
  uint64_t responses = 0;  // DiscoveryResponses written (started)
  uint64_t acks = 0;
  uint64_t nacks = 0;
  uint64_t stale = 0;  // requests ignored for a stale nonce
};

// One type URL on one connected stream.
struct AdsClientType {
  std::string type_url;
  bool wildcard = false;
  size_t subscribed_names = 0;  // explicit names (not counting "*")
  std::string sent_version;     // last response's version ("" if none)
  std::string acked_version;    // last ACKed version_info
  std::string nacked_version;   // version of the last NACKed response
  std::string last_nack_error;  // its error_detail.message
};

// One connected stream.
struct AdsClient {
  uint64_t stream_id = 0;
  std::string peer;  // gRPC's peer string, e.g. "ipv4:10.0.0.7:51234"
  std::string node_id, node_cluster, user_agent_name, user_agent_version;
  std::vector<AdsClientType> types;
};

struct AdsStats {
  size_t connected_streams = 0;
  uint64_t streams_opened = 0;
  uint64_t invalid_requests = 0;  // streams ended for a request without type_url
  // Current version per type URL published (types with resources).
  std::map<std::string, std::string, std::less<>> versions;
  std::map<std::string, AdsTypeCounters, std::less<>> by_type;
  std::vector<AdsClient> clients;  // by stream id
};

class AdsHub;  // the state streams share with the server (ads_stream.h)

class AdsServer final
    : public envoy::service::discovery::v3::AggregatedDiscoveryService::CallbackService {
 public:
  explicit AdsServer(AdsServerOptions options = {});
  ~AdsServer() override;  // Shutdown()
  AdsServer(const AdsServer&) = delete;
  AdsServer& operator=(const AdsServer&) = delete;

  // Makes `snapshot` the served state: for each type whose resources
  // changed, a new version, and every stream subscribed to it gets a
  // response if what it selects changed. Returns at once, without writing.
  // Null is a caller's bug: logged and ignored (never "delete everything").
  void Publish(std::shared_ptr<const XdsSnapshot> snapshot);

  // The current version of `type_url` ("" before the first Publish).
  std::string Version(std::string_view type_url) const;

  // Counters and connected clients (for the JSON debug dump).
  AdsStats Stats() const;
  // The same without `clients` (no lock on each stream): for metrics.
  AdsStats Counters() const;

  // Refuses new streams and ends every open one (see the top). Idempotent;
  // does not wait for OnDone (grpc::Server::Shutdown does).
  void Shutdown();

  // gRPC: one reactor per stream.
  ::grpc::ServerBidiReactor<envoy::service::discovery::v3::DiscoveryRequest,
                            envoy::service::discovery::v3::DiscoveryResponse>*
  StreamAggregatedResources(::grpc::CallbackServerContext* context) override;

 private:
  const std::shared_ptr<AdsHub> hub_;
};

}  // namespace inferd::discovery
