#include "discovery/kube_endpoint_slices.h"

#include <arpa/inet.h>
#include <rapidjson/document.h>

#include <cstring>

#include "core/sanitize.h"

namespace inferd::discovery {
namespace {

using rapidjson::Value;

const Value* Member(const Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string StringMember(const Value& object, const char* name) {
  const Value* v = Member(object, name);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength())
                                       : std::string();
}

// A condition: its value when a boolean, `absent` when missing or null.
bool Condition(const Value& endpoint, const char* name, bool absent) {
  const Value* conditions = Member(endpoint, "conditions");
  const Value* v = conditions != nullptr ? Member(*conditions, name) : nullptr;
  return v != nullptr && v->IsBool() ? v->GetBool() : absent;
}

// The port this slice's endpoints serve on; 0 when it has none of that name.
uint16_t SlicePort(const Value& slice, const KubePort& port) {
  if (port.number != 0) return port.number;
  const Value* ports = Member(slice, "ports");
  if (ports == nullptr || !ports->IsArray()) return 0;
  for (const Value& p : ports->GetArray()) {
    if (StringMember(p, "name") != port.name) continue;
    const Value* n = Member(p, "port");
    if (n != nullptr && n->IsUint() && n->GetUint() >= 1 && n->GetUint() <= 65535) {
      return static_cast<uint16_t>(n->GetUint());
    }
  }
  return 0;
}

std::string ResourceVersion(const Value& object) {
  const Value* metadata = Member(object, "metadata");
  return metadata != nullptr ? StringMember(*metadata, "resourceVersion") : std::string();
}

std::string SliceName(const Value& slice) {
  const Value* metadata = Member(slice, "metadata");
  return metadata != nullptr ? StringMember(*metadata, "name") : std::string();
}

StatusOr<HostSet> EndpointsOf(const Value& slice, const KubePort& port) {
  if (!slice.IsObject()) return InvalidArgument("an EndpointSlice is not a JSON object");
  HostSet set;
  std::string type = StringMember(slice, "addressType");
  uint16_t number = SlicePort(slice, port);
  if ((type != "IPv4" && type != "IPv6") || number == 0) return set;
  const Value* endpoints = Member(slice, "endpoints");
  if (endpoints == nullptr || endpoints->IsNull()) return set;
  if (!endpoints->IsArray()) return InvalidArgument("EndpointSlice endpoints is not an array");
  for (const Value& e : endpoints->GetArray()) {
    if (!Condition(e, "ready", true) || Condition(e, "terminating", false)) continue;
    const Value* addresses = Member(e, "addresses");
    if (addresses == nullptr || !addresses->IsArray()) continue;
    for (const Value& a : addresses->GetArray()) {
      if (!a.IsString()) continue;
      // Only IP literals of the slice's family: anything else (a name, which
      // would be resolved, spaces, a zone, "09.1.0.5") is ignored.
      std::string address(a.GetString(), a.GetStringLength());
      unsigned char parsed[sizeof(in6_addr)];
      if (address.size() != std::strlen(address.c_str()) ||
          inet_pton(type == "IPv4" ? AF_INET : AF_INET6, address.c_str(), parsed) != 1) {
        continue;
      }
      set.insert(HostEndpoint{std::move(address), number});
    }
  }
  return set;
}

Status ParseJson(std::string_view text, rapidjson::Document& doc, const char* what) {
  // Iterative: deeply nested input cannot exhaust the stack.
  doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return InvalidArgument(std::string(what) +
                           " is not a JSON object: " + Bounded(text.substr(0, 64)));
  }
  return Status();
}

}  // namespace

StatusOr<SliceList> ParseEndpointSliceList(std::string_view body, const KubePort& port) {
  rapidjson::Document doc;
  INFERD_RETURN_IF_ERROR(ParseJson(body, doc, "the EndpointSlice list"));
  SliceList list;
  list.resource_version = ResourceVersion(doc);
  if (list.resource_version.empty()) {
    return InvalidArgument("the EndpointSlice list has no metadata.resourceVersion");
  }
  const Value* items = Member(doc, "items");
  if (items == nullptr || items->IsNull()) return list;
  if (!items->IsArray()) return InvalidArgument("the EndpointSlice list's items is not an array");
  for (const Value& slice : items->GetArray()) {
    StatusOr<HostSet> set = EndpointsOf(slice, port);
    if (!set.ok()) return set.status();
    list.slices[SliceName(slice)] = *std::move(set);
  }
  return list;
}

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line, const KubePort& port) {
  rapidjson::Document doc;
  INFERD_RETURN_IF_ERROR(ParseJson(line, doc, "a watch event"));
  const Value* object = Member(doc, "object");
  if (object == nullptr || !object->IsObject()) {
    return InvalidArgument("a watch event has no object");
  }
  std::string type = StringMember(doc, "type");
  WatchEvent event;
  if (type == "ERROR") {
    event.type = WatchEvent::Type::kError;
    const Value* code = Member(*object, "code");
    event.error_code = code != nullptr && code->IsInt() ? code->GetInt() : 0;
    event.error_message = StringMember(*object, "message");
    return event;
  }
  if (type == "ADDED") {
    event.type = WatchEvent::Type::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEvent::Type::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEvent::Type::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEvent::Type::kBookmark;
  } else {
    return InvalidArgument("a watch event of unknown type '" + Bounded(type) + "'");
  }
  event.resource_version = ResourceVersion(*object);
  if (event.type == WatchEvent::Type::kBookmark) return event;
  event.slice_name = SliceName(*object);
  if (event.type == WatchEvent::Type::kDeleted) return event;
  StatusOr<HostSet> set = EndpointsOf(*object, port);
  if (!set.ok()) return set.status();
  event.endpoints = *std::move(set);
  return event;
}

HostSet UnionOfSlices(const SliceMap& slices) {
  HostSet all;
  for (const auto& [name, set] : slices) all.insert(set.begin(), set.end());
  return all;
}

}  // namespace inferd::discovery
