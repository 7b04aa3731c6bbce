// Internals of the ADS server (ads_server.h has the contract):
//   AdsHub     what the server and its streams share: the published
//              snapshot and versions, the registry of open streams, counters.
//   AdsStream  the reactor of one StreamAggregatedResources call.
//
// Lifetime: streams are shared-owned. gRPC's reference (self_) is dropped in
// OnDone; the hub's registry and a Publish or Stats in progress may hold
// others, so a stream that ends while Publish is notifying it stays valid
// and, being done, only ignores the notice. Streams hold the hub (not the
// AdsServer), so nothing dangles whichever goes first.
// Locks: a stream's mu_ may be held while taking the hub's locks, never the
// other way round (the hub copies its registry and calls streams unlocked).
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_annotations.h"
#include "discovery/ads_server.h"
#include "discovery/ads_subscription.h"
#include "envoy_discovery.grpc.pb.h"

namespace inferd::discovery {

using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

// One published state: immutable, swapped whole by Publish.
struct AdsPublished {
  std::shared_ptr<const XdsSnapshot> snapshot;
  std::map<std::string, std::string, std::less<>> versions;  // types with resources

  // The version of `type_url` (that of no resources for a type not present).
  std::string VersionOf(std::string_view type_url) const;
};

class AdsStream;

class AdsHub {
 public:
  explicit AdsHub(AdsServerOptions options) : options_(std::move(options)) {}

  const AdsServerOptions& options() const { return options_; }

  // Null before the first Publish.
  std::shared_ptr<const AdsPublished> Current() const INFERD_EXCLUDES(mu_);

  // Swaps in `snapshot`; returns the types whose content changed (every
  // type of either snapshot on the first Publish) and whether it was the
  // first.
  std::vector<std::string> Swap(std::shared_ptr<const XdsSnapshot> snapshot, bool* first)
      INFERD_EXCLUDES(mu_);

  // Stream registry. Add: a new stream id, or 0 once closed (refuse it).
  uint64_t Add(std::shared_ptr<AdsStream> stream) INFERD_EXCLUDES(mu_);
  void Remove(uint64_t id) INFERD_EXCLUDES(mu_);
  std::vector<std::shared_ptr<AdsStream>> Streams() const INFERD_EXCLUDES(mu_);
  // Closes the registry; returns the open streams.
  std::vector<std::shared_ptr<AdsStream>> Close() INFERD_EXCLUDES(mu_);

  void CountResponse(std::string_view type_url) INFERD_EXCLUDES(mu_);
  void CountAck(std::string_view type_url) INFERD_EXCLUDES(mu_);
  void CountNack(std::string_view type_url) INFERD_EXCLUDES(mu_);
  void CountStale(std::string_view type_url) INFERD_EXCLUDES(mu_);
  void CountInvalid() INFERD_EXCLUDES(mu_);

  // Counters and versions (clients left empty).
  AdsStats Counters() const INFERD_EXCLUDES(mu_);

 private:
  const AdsServerOptions options_;
  mutable Mutex mu_;
  std::shared_ptr<const AdsPublished> current_ INFERD_GUARDED_BY(mu_);
  bool closed_ INFERD_GUARDED_BY(mu_) = false;
  uint64_t next_id_ INFERD_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::shared_ptr<AdsStream>> streams_ INFERD_GUARDED_BY(mu_);
  uint64_t invalid_ INFERD_GUARDED_BY(mu_) = 0;
  std::map<std::string, AdsTypeCounters, std::less<>> counters_ INFERD_GUARDED_BY(mu_);
};

class AdsStream final : public ::grpc::ServerBidiReactor<DiscoveryRequest, DiscoveryResponse>,
                        public std::enable_shared_from_this<AdsStream> {
 public:
  AdsStream(std::shared_ptr<AdsHub> hub, ::grpc::CallbackServerContext* context);

  // Takes gRPC's reference and registers; starts reading, or finishes with
  // UNAVAILABLE when the server is shutting down.
  void Begin();

  // Publish: `types` changed (`all`: every subscribed type is due).
  void Notify(const std::vector<std::string>& types, bool all) INFERD_EXCLUDES(mu_);

  // Shutdown: finish now, or cancel when a write is in flight.
  void Close() INFERD_EXCLUDES(mu_);

  AdsClient Describe() const INFERD_EXCLUDES(mu_);

  void OnReadDone(bool ok) override INFERD_EXCLUDES(mu_);
  void OnWriteDone(bool ok) override INFERD_EXCLUDES(mu_);
  void OnCancel() override INFERD_EXCLUDES(mu_);
  void OnDone() override INFERD_EXCLUDES(mu_);

 private:
  // The request just read: subscription, ACK/NACK. False: end the stream.
  bool HandleRequestLocked() INFERD_REQUIRES(mu_);
  void NoteNodeLocked(const DiscoveryRequest& request) INFERD_REQUIRES(mu_);
  // Starts the next due response, if no write is in flight.
  void PumpLocked() INFERD_REQUIRES(mu_);
  // Removes and returns the due type to look at next (kPushOrder first).
  std::string TakeDueLocked() INFERD_REQUIRES(mu_);
  bool BuildLocked(const std::string& type_url, const AdsPublished& published) INFERD_REQUIRES(mu_);
  // Finishes with `status` now, or after the write in flight.
  void EndLocked(::grpc::Status status) INFERD_REQUIRES(mu_);
  std::string ClientNameLocked() const INFERD_REQUIRES(mu_);

  const std::shared_ptr<AdsHub> hub_;
  ::grpc::CallbackServerContext* const context_;  // valid until OnDone
  const std::string peer_;

  mutable Mutex mu_;
  std::shared_ptr<AdsStream> self_ INFERD_GUARDED_BY(mu_);  // gRPC's reference
  uint64_t id_ INFERD_GUARDED_BY(mu_) = 0;
  DiscoveryRequest request_ INFERD_GUARDED_BY(mu_);    // being read
  DiscoveryResponse response_ INFERD_GUARDED_BY(mu_);  // being written
  bool writing_ INFERD_GUARDED_BY(mu_) = false;
  bool ending_ INFERD_GUARDED_BY(mu_) = false;    // finish when the write completes
  bool finished_ INFERD_GUARDED_BY(mu_) = false;  // Finish called
  bool done_ INFERD_GUARDED_BY(mu_) = false;      // OnDone ran
  ::grpc::Status end_status_ INFERD_GUARDED_BY(mu_);
  bool have_node_ INFERD_GUARDED_BY(mu_) = false;
  std::string node_id_ INFERD_GUARDED_BY(mu_), node_cluster_ INFERD_GUARDED_BY(mu_),
      user_agent_name_ INFERD_GUARDED_BY(mu_), user_agent_version_ INFERD_GUARDED_BY(mu_);
  uint64_t next_nonce_ INFERD_GUARDED_BY(mu_) = 1;
  std::map<std::string, AdsTypeState, std::less<>> types_ INFERD_GUARDED_BY(mu_);
  std::set<std::string, std::less<>> due_ INFERD_GUARDED_BY(mu_);  // types to look at
};

}  // namespace inferd::discovery
