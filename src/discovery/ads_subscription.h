// The state-of-the-world decisions of one type URL on one ADS stream, as
// pure functions on a plain struct (internal to the ADS server; no gRPC):
// what a request's names subscribe to, whether a response is due, what it
// holds, and the content versions of a snapshot. The rules are listed at the
// top of ads_server.h.
//
// Threading: none; the stream calls these under its own lock.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "discovery/xds_snapshot.h"

namespace inferd::discovery {

// Listener and Cluster: wildcard subscriptions, complete responses.
bool IsCompleteStateType(std::string_view type_url);

// The content version of one type's resources: 16 hex digits of a 64-bit
// FNV-1a over every (name, bytes, in_wildcard), in name order.
std::string ContentVersion(const XdsResourceMap& resources);

// One resource as a stream holds it: its bytes, sharing ownership of the
// snapshot they live in (no copy per stream).
using SharedBytes = std::shared_ptr<const std::string>;
using AdsSelection = std::vector<std::pair<std::string, SharedBytes>>;

struct AdsTypeState {
  bool complete = false;  // IsCompleteStateType
  // Subscription.
  bool wildcard = false;
  bool named = false;  // some request named a resource (ends empty = wildcard)
  std::set<std::string, std::less<>> names;  // explicit names, without "*"
  bool resubscribed = false;                 // subscription changed since the last response
  // What the client was last sent, by name (for RDS/EDS, everything it was
  // sent and is still subscribed to).
  std::map<std::string, SharedBytes, std::less<>> sent;
  bool responded = false;  // a response went out on this stream
  std::string sent_version, nonce;
  // What the client said.
  std::string acked_version, nacked_version, nack_error;
};

// Applies the names of a request for this type (`first`: the stream's first
// request for it). Returns whether the subscription changed; drops names no
// longer subscribed from `sent` (the client forgets them).
bool UpdateSubscription(AdsTypeState& state, const std::vector<std::string>& names, bool first);

// The resources the subscription selects from `snapshot` (name order), if a
// response is due; nullopt when the client has all of it already.
std::optional<AdsSelection> SelectResponse(const AdsTypeState& state,
                                           const std::shared_ptr<const XdsSnapshot>& snapshot,
                                           std::string_view type_url);

// Records that `selection` went out with `version` and `nonce`.
void RecordSent(AdsTypeState& state, const AdsSelection& selection, std::string version,
                std::string nonce);

// Records, without a response, that the client already has what the
// subscription selects (a reconnect that names the current version).
void RecordAlreadyHeld(AdsTypeState& state, const std::shared_ptr<const XdsSnapshot>& snapshot,
                       std::string_view type_url, std::string version);

}  // namespace inferd::discovery
