#include "discovery/ads_subscription.h"

#include <cstdint>
#include <cstdio>

namespace inferd::discovery {
namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

void Mix(uint64_t& h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
}

// Length first, so that ("ab","c") and ("a","bc") differ.
void MixField(uint64_t& h, std::string_view bytes) {
  char length[24];
  int n = std::snprintf(length, sizeof(length), "%zu:", bytes.size());
  Mix(h, std::string_view(length, static_cast<size_t>(n)));
  Mix(h, bytes);
}

SharedBytes Share(const std::shared_ptr<const XdsSnapshot>& snapshot, const XdsResource& r) {
  return SharedBytes(snapshot, &r.bytes);  // aliasing: keeps the snapshot alive
}

bool SameBytes(const SharedBytes& a, const SharedBytes& b) { return a == b || *a == *b; }

// Complete types: the wildcard-selected and named resources that exist.
AdsSelection SelectComplete(const AdsTypeState& state,
                            const std::shared_ptr<const XdsSnapshot>& snapshot,
                            std::string_view type_url) {
  AdsSelection out;
  for (const auto& [name, resource] : snapshot->Of(type_url)) {
    if ((state.wildcard && resource.in_wildcard) || state.names.contains(name)) {
      out.emplace_back(name, Share(snapshot, resource));
    }
  }
  return out;
}

// Other types: the named resources that exist.
AdsSelection SelectNamed(const AdsTypeState& state,
                         const std::shared_ptr<const XdsSnapshot>& snapshot,
                         std::string_view type_url) {
  AdsSelection out;
  const XdsResourceMap& resources = snapshot->Of(type_url);
  for (const std::string& name : state.names) {
    auto it = resources.find(name);
    if (it != resources.end()) out.emplace_back(name, Share(snapshot, it->second));
  }
  return out;
}

}  // namespace

bool IsCompleteStateType(std::string_view type_url) {
  return type_url == kListenerType || type_url == kClusterType;
}

std::string ContentVersion(const XdsResourceMap& resources) {
  uint64_t h = kFnvOffset;
  for (const auto& [name, resource] : resources) {
    MixField(h, name);
    MixField(h, resource.bytes);
    Mix(h, resource.in_wildcard ? "w" : "n");
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

bool UpdateSubscription(AdsTypeState& state, const std::vector<std::string>& names, bool first) {
  bool wildcard = false;
  std::set<std::string, std::less<>> explicit_names;
  for (const std::string& name : names) {
    if (state.complete && name == "*") {
      wildcard = true;
    } else {
      explicit_names.insert(name);
    }
  }
  if (!explicit_names.empty()) state.named = true;
  // Empty names: wildcard on the first request, and as long as nothing was
  // ever named (Envoy repeats its empty list); "nothing" after names.
  if (state.complete && names.empty() && (first || (state.wildcard && !state.named))) {
    wildcard = true;
  }
  bool changed = first || wildcard != state.wildcard || explicit_names != state.names;
  state.wildcard = wildcard;
  state.names = std::move(explicit_names);
  if (changed) {
    state.resubscribed = true;
    if (!state.complete) {
      std::erase_if(state.sent,
                    [&](const auto& entry) { return !state.names.contains(entry.first); });
    }
  }
  return changed;
}

std::optional<AdsSelection> SelectResponse(const AdsTypeState& state,
                                           const std::shared_ptr<const XdsSnapshot>& snapshot,
                                           std::string_view type_url) {
  if (snapshot == nullptr) return std::nullopt;  // nothing published yet
  if (state.complete) {
    AdsSelection selection = SelectComplete(state, snapshot, type_url);
    bool same = selection.size() == state.sent.size();
    for (size_t i = 0; same && i < selection.size(); ++i) {
      auto it = state.sent.find(selection[i].first);
      same = it != state.sent.end() && SameBytes(it->second, selection[i].second);
    }
    if (same && !state.resubscribed) return std::nullopt;
    return selection;
  }
  AdsSelection selection = SelectNamed(state, snapshot, type_url);
  for (const auto& [name, bytes] : selection) {
    auto it = state.sent.find(name);
    if (it == state.sent.end() || !SameBytes(it->second, bytes)) return selection;
  }
  return std::nullopt;  // nothing new (possibly nothing that exists)
}

void RecordSent(AdsTypeState& state, const AdsSelection& selection, std::string version,
                std::string nonce) {
  if (state.complete) state.sent.clear();
  for (const auto& [name, bytes] : selection) state.sent[name] = bytes;
  state.resubscribed = false;
  state.responded = true;
  state.sent_version = std::move(version);
  state.nonce = std::move(nonce);
}

void RecordAlreadyHeld(AdsTypeState& state, const std::shared_ptr<const XdsSnapshot>& snapshot,
                       std::string_view type_url, std::string version) {
  AdsSelection selection = state.complete ? SelectComplete(state, snapshot, type_url)
                                          : SelectNamed(state, snapshot, type_url);
  if (state.complete) state.sent.clear();
  for (const auto& [name, bytes] : selection) state.sent[name] = bytes;
  state.resubscribed = false;
  state.sent_version = std::move(version);
}

}  // namespace inferd::discovery
