#include "discovery/ads_stream.h"

#include <array>

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd::discovery {
namespace {

// gRPC clients refuse messages over this by default.
constexpr size_t kClientDefaultMaxReceive = 4 << 20;
// Longest NACK message kept and logged.
constexpr size_t kMaxNackMessage = 1024;

// Make before break: clusters and their endpoints before the listeners and
// routes that point at them.
constexpr std::array<std::string_view, 4> kPushOrder = {kClusterType, kClusterLoadAssignmentType,
                                                        kListenerType, kRouteConfigurationType};

// "type.googleapis.com/envoy.config.listener.v3.Listener" -> "Listener".
std::string_view ShortType(std::string_view type_url) {
  size_t dot = type_url.rfind('.');
  return dot == std::string_view::npos ? type_url : type_url.substr(dot + 1);
}

// Resource types one stream may ask for (four are served).
constexpr size_t kMaxTypesPerStream = 16;

}  // namespace

AdsStream::AdsStream(std::shared_ptr<AdsHub> hub, ::grpc::CallbackServerContext* context)
    : hub_(std::move(hub)), context_(context), peer_(context->peer()) {}

void AdsStream::Begin() {
  MutexLock lock(mu_);
  self_ = shared_from_this();
  id_ = hub_->Add(self_);
  if (id_ == 0) {
    finished_ = ending_ = true;
    Finish(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "xDS control plane is shutting down"));
    return;
  }
  INFERD_VLOG(1) << "ADS stream " << id_ << " opened by " << EscapeControl(peer_);
  StartRead(&request_);
}

void AdsStream::Notify(const std::vector<std::string>& types, bool all) {
  MutexLock lock(mu_);
  if (ending_ || done_) return;
  if (all) {
    for (const auto& entry : types_) due_.insert(entry.first);
  } else {
    for (const std::string& type : types) {
      if (types_.contains(type)) due_.insert(type);
    }
  }
  PumpLocked();
}

void AdsStream::Close() {
  MutexLock lock(mu_);
  if (finished_ || done_) return;
  // A client that does not read keeps a write in flight for ever (flow
  // control), and the status could not pass it: cancel the call instead.
  if (writing_) context_->TryCancel();
  EndLocked(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "xDS control plane is shutting down"));
}

AdsClient AdsStream::Describe() const {
  MutexLock lock(mu_);
  AdsClient client{.stream_id = id_,
                   .peer = peer_,
                   .node_id = node_id_,
                   .node_cluster = node_cluster_,
                   .user_agent_name = user_agent_name_,
                   .user_agent_version = user_agent_version_,
                   .types = {}};
  for (const auto& [type_url, state] : types_) {
    client.types.push_back({.type_url = type_url,
                            .wildcard = state.wildcard,
                            .subscribed_names = state.names.size(),
                            .sent_version = state.sent_version,
                            .acked_version = state.acked_version,
                            .nacked_version = state.nacked_version,
                            .last_nack_error = state.nack_error});
  }
  return client;
}

void AdsStream::OnReadDone(bool ok) {
  MutexLock lock(mu_);
  if (!ok) {  // the client half-closed, or the call broke
    EndLocked(::grpc::Status::OK);
    return;
  }
  if (ending_) return;
  if (!HandleRequestLocked()) return;
  StartRead(&request_);
  PumpLocked();
}

void AdsStream::OnWriteDone(bool ok) {
  MutexLock lock(mu_);
  writing_ = false;
  if (!ok) {
    EndLocked(::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "write failed"));
  } else if (ending_) {
    EndLocked(end_status_);
  } else {
    PumpLocked();
  }
}

void AdsStream::OnCancel() {
  MutexLock lock(mu_);
  EndLocked(::grpc::Status::CANCELLED);
}

void AdsStream::OnDone() {
  std::shared_ptr<AdsStream> last;  // may destroy *this when it goes
  uint64_t id = 0;
  {
    MutexLock lock(mu_);
    done_ = true;
    id = id_;
    last = std::move(self_);
    if (id != 0) {
      INFERD_VLOG(1) << "ADS stream " << id << " of " << ClientNameLocked() << " done";
    }
  }
  if (id != 0) hub_->Remove(id);
}

void AdsStream::EndLocked(::grpc::Status status) {
  if (finished_) return;
  if (!ending_) {
    ending_ = true;
    end_status_ = std::move(status);
  }
  if (writing_) return;  // OnWriteDone finishes
  finished_ = true;
  Finish(end_status_);
}

void AdsStream::NoteNodeLocked(const DiscoveryRequest& request) {
  if (have_node_ || !request.has_node()) return;
  have_node_ = true;
  const auto& node = request.node();
  node_id_ = node.id();
  node_cluster_ = node.cluster();
  user_agent_name_ = node.user_agent_name();
  user_agent_version_ = node.user_agent_version();
  INFERD_LOG(Info) << "ADS stream " << id_ << " from " << EscapeControl(peer_) << ": node '"
                   << Bounded(node_id_) << "' cluster '" << Bounded(node_cluster_) << "' ("
                   << Bounded(user_agent_name_) << " " << Bounded(user_agent_version_) << ")";
}

std::string AdsStream::ClientNameLocked() const {
  return "node '" + Bounded(node_id_) + "' (" + EscapeControl(peer_) + ")";
}

bool AdsStream::HandleRequestLocked() {
  const DiscoveryRequest& request = request_;
  NoteNodeLocked(request);
  if (request.type_url().empty()) {
    INFERD_LOG(Warning) << "ADS stream " << id_ << " of " << ClientNameLocked()
                        << ": DiscoveryRequest without type_url; ending the stream";
    hub_->CountInvalid();
    EndLocked(::grpc::Status(::grpc::StatusCode::INVALID_ARGUMENT,
                             "DiscoveryRequest.type_url is required on ADS"));
    return false;
  }
  const std::string& type_url = request.type_url();
  if (types_.count(type_url) == 0 && types_.size() >= kMaxTypesPerStream) {
    // Four types are served; a client may ask for a few more (Envoy's secrets,
    // runtime), never for dozens: state per type must stay bounded.
    INFERD_LOG(Warning) << "ADS stream " << id_ << " of " << ClientNameLocked() << ": more than "
                        << kMaxTypesPerStream << " resource types asked for; ending the stream";
    hub_->CountInvalid();
    EndLocked(::grpc::Status(::grpc::StatusCode::INVALID_ARGUMENT,
                             "too many resource types on one ADS stream"));
    return false;
  }
  auto [it, first] = types_.try_emplace(type_url);
  AdsTypeState& state = it->second;
  if (first) state.complete = IsCompleteStateType(type_url);

  const std::string& nonce = request.response_nonce();
  if (!nonce.empty() && state.responded) {
    if (nonce != state.nonce) {
      hub_->CountStale(type_url);
      INFERD_VLOG(2) << "ADS stream " << id_ << ": stale nonce '" << Bounded(nonce) << "' for "
                     << ShortType(type_url) << " (latest '" << state.nonce << "'); ignored";
      return true;
    }
    if (request.has_error_detail()) {
      state.nacked_version = state.sent_version;
      state.nack_error = Bounded(request.error_detail().message(), kMaxNackMessage);
      hub_->CountNack(type_url);
      INFERD_LOG(Warning) << "ADS NACK from " << ClientNameLocked() << " for "
                          << ShortType(type_url) << " version " << state.sent_version << " (keeps "
                          << Bounded(request.version_info()) << "): " << state.nack_error;
    } else {
      state.acked_version = request.version_info();
      hub_->CountAck(type_url);
      INFERD_VLOG(2) << "ADS stream " << id_ << ": ACK " << ShortType(type_url) << " version "
                     << Bounded(state.acked_version);
    }
  }

  std::vector<std::string> names(request.resource_names().begin(), request.resource_names().end());
  bool changed = UpdateSubscription(state, names, first);
  if (first && state.complete && state.wildcard && !request.version_info().empty()) {
    // A reconnecting wildcard client that already holds the current content.
    std::shared_ptr<const AdsPublished> published = hub_->Current();
    if (published != nullptr && request.version_info() == published->VersionOf(type_url)) {
      RecordAlreadyHeld(state, published->snapshot, type_url, request.version_info());
      state.acked_version = request.version_info();
      changed = false;
      INFERD_VLOG(1) << "ADS stream " << id_ << ": " << ShortType(type_url)
                     << " already at version " << state.acked_version;
    }
  }
  if (changed) {
    INFERD_VLOG(1) << "ADS stream " << id_ << ": " << ShortType(type_url) << " subscription "
                   << (state.wildcard ? "wildcard + " : "") << state.names.size() << " names";
    due_.insert(type_url);
  }
  return true;
}

void AdsStream::PumpLocked() {
  if (writing_ || ending_ || done_ || due_.empty()) return;
  std::shared_ptr<const AdsPublished> published = hub_->Current();
  if (published == nullptr) return;  // stays due until the first Publish
  while (!due_.empty()) {
    std::string type_url = TakeDueLocked();
    if (BuildLocked(type_url, *published)) return;
  }
}

std::string AdsStream::TakeDueLocked() {
  auto it = due_.begin();
  for (std::string_view type_url : kPushOrder) {
    auto found = due_.find(type_url);
    if (found != due_.end()) {
      it = found;
      break;
    }
  }
  return std::move(due_.extract(it).value());
}

bool AdsStream::BuildLocked(const std::string& type_url, const AdsPublished& published) {
  auto it = types_.find(type_url);
  if (it == types_.end()) return false;
  AdsTypeState& state = it->second;
  std::optional<AdsSelection> selection = SelectResponse(state, published.snapshot, type_url);
  if (!selection.has_value()) return false;

  std::string version = published.VersionOf(type_url);
  std::string nonce = std::to_string(next_nonce_++);
  response_.Clear();
  response_.set_version_info(version);
  response_.set_type_url(type_url);
  response_.set_nonce(nonce);
  response_.mutable_control_plane()->set_identifier(hub_->options().control_plane_id);
  for (const auto& [name, bytes] : *selection) {
    google::protobuf::Any* any = response_.add_resources();
    any->set_type_url(type_url);
    any->set_value(*bytes);
  }
  RecordSent(state, *selection, version, nonce);

  size_t size = response_.ByteSizeLong();
  if (size > kClientDefaultMaxReceive) {
    INFERD_LOG(Warning) << "ADS response of " << size << " bytes (" << ShortType(type_url)
                        << ") to " << ClientNameLocked()
                        << " is over gRPC clients' default 4 MiB receive limit";
  }
  INFERD_VLOG(1) << "ADS stream " << id_ << ": " << ShortType(type_url) << " version " << version
                 << " nonce " << nonce << ", " << selection->size() << " resources, " << size
                 << " bytes";
  writing_ = true;
  hub_->CountResponse(type_url);
  StartWrite(&response_);
  return true;
}

}  // namespace inferd::discovery
