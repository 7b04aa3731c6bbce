#include "discovery/ads_server.h"

#include <set>

#include "core/log.h"
#include "discovery/ads_stream.h"

namespace inferd::discovery {

// ---- AdsPublished, AdsHub ------------------------------------------------------------------

std::string AdsPublished::VersionOf(std::string_view type_url) const {
  auto it = versions.find(type_url);
  if (it != versions.end()) return it->second;
  static const std::string kEmpty = ContentVersion({});
  return kEmpty;
}

std::shared_ptr<const AdsPublished> AdsHub::Current() const {
  MutexLock lock(mu_);
  return current_;
}

std::vector<std::string> AdsHub::Swap(std::shared_ptr<const XdsSnapshot> snapshot, bool* first) {
  // Hashing and comparing outside the lock: both snapshots are immutable.
  auto next = std::make_shared<AdsPublished>();
  next->snapshot = std::move(snapshot);
  for (const auto& [type_url, resources] : next->snapshot->resources) {
    if (!resources.empty()) next->versions[type_url] = ContentVersion(resources);
  }
  std::shared_ptr<const AdsPublished> previous;
  {
    MutexLock lock(mu_);
    previous = std::exchange(current_, next);
  }
  *first = previous == nullptr;
  std::set<std::string, std::less<>> types;
  for (const auto& entry : next->snapshot->resources) types.insert(entry.first);
  if (previous != nullptr) {
    for (const auto& entry : previous->snapshot->resources) types.insert(entry.first);
  }
  std::vector<std::string> changed;
  for (const std::string& type_url : types) {
    if (previous == nullptr || previous->snapshot->Of(type_url) != next->snapshot->Of(type_url)) {
      changed.push_back(type_url);
    }
  }
  return changed;
}

uint64_t AdsHub::Add(std::shared_ptr<AdsStream> stream) {
  MutexLock lock(mu_);
  if (closed_) return 0;
  uint64_t id = next_id_++;
  streams_.emplace(id, std::move(stream));
  return id;
}

void AdsHub::Remove(uint64_t id) {
  std::shared_ptr<AdsStream> last;  // released outside the lock
  MutexLock lock(mu_);
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  last = std::move(it->second);
  streams_.erase(it);
}

std::vector<std::shared_ptr<AdsStream>> AdsHub::Streams() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<AdsStream>> out;
  out.reserve(streams_.size());
  for (const auto& entry : streams_) out.push_back(entry.second);
  return out;
}

std::vector<std::shared_ptr<AdsStream>> AdsHub::Close() {
  MutexLock lock(mu_);
  closed_ = true;
  std::vector<std::shared_ptr<AdsStream>> out;
  for (const auto& entry : streams_) out.push_back(entry.second);
  return out;
}

void AdsHub::CountResponse(std::string_view type_url) {
  MutexLock lock(mu_);
  ++counters_[std::string(type_url)].responses;
}

void AdsHub::CountAck(std::string_view type_url) {
  MutexLock lock(mu_);
  ++counters_[std::string(type_url)].acks;
}

void AdsHub::CountNack(std::string_view type_url) {
  MutexLock lock(mu_);
  ++counters_[std::string(type_url)].nacks;
}

void AdsHub::CountStale(std::string_view type_url) {
  MutexLock lock(mu_);
  ++counters_[std::string(type_url)].stale;
}

void AdsHub::CountInvalid() {
  MutexLock lock(mu_);
  ++invalid_;
}

AdsStats AdsHub::Counters() const {
  MutexLock lock(mu_);
  AdsStats stats;
  stats.connected_streams = streams_.size();
  stats.streams_opened = next_id_ - 1;
  stats.invalid_requests = invalid_;
  if (current_ != nullptr) stats.versions = current_->versions;
  stats.by_type = counters_;
  return stats;
}

// ---- AdsServer -----------------------------------------------------------------------------

AdsServer::AdsServer(AdsServerOptions options)
    : hub_(std::make_shared<AdsHub>(std::move(options))) {}

AdsServer::~AdsServer() { Shutdown(); }

void AdsServer::Publish(std::shared_ptr<const XdsSnapshot> snapshot) {
  if (snapshot == nullptr) {  // a caller's bug; an empty snapshot would delete everything
    INFERD_LOG(Error) << "ADS server: Publish(nullptr) ignored";
    return;
  }
  bool first = false;
  std::vector<std::string> changed = hub_->Swap(std::move(snapshot), &first);
  if (changed.empty() && !first) return;
  std::shared_ptr<const AdsPublished> published = hub_->Current();
  for (const std::string& type_url : changed) {
    INFERD_VLOG(1) << "xDS " << type_url << " now version " << published->VersionOf(type_url);
  }
  for (const std::shared_ptr<AdsStream>& stream : hub_->Streams()) {
    stream->Notify(changed, first);
  }
}

std::string AdsServer::Version(std::string_view type_url) const {
  std::shared_ptr<const AdsPublished> published = hub_->Current();
  return published == nullptr ? std::string() : published->VersionOf(type_url);
}

AdsStats AdsServer::Counters() const { return hub_->Counters(); }

AdsStats AdsServer::Stats() const {
  AdsStats stats = hub_->Counters();
  for (const std::shared_ptr<AdsStream>& stream : hub_->Streams()) {
    stats.clients.push_back(stream->Describe());
  }
  return stats;
}

void AdsServer::Shutdown() {
  std::vector<std::shared_ptr<AdsStream>> streams = hub_->Close();
  if (!streams.empty()) {
    INFERD_LOG(Info) << "ADS server shutting down: ending " << streams.size() << " streams";
  }
  for (const std::shared_ptr<AdsStream>& stream : streams) stream->Close();
}

::grpc::ServerBidiReactor<envoy::service::discovery::v3::DiscoveryRequest,
                          envoy::service::discovery::v3::DiscoveryResponse>*
AdsServer::StreamAggregatedResources(::grpc::CallbackServerContext* context) {
  auto stream = std::make_shared<AdsStream>(hub_, context);
  stream->Begin();  // gRPC's reference: the stream's own self_, until OnDone
  return stream.get();
}

}  // namespace inferd::discovery
