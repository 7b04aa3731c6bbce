// infer-perf --search: a candidate's edits of the model's config JSON (the
// load API's override) and the same fields as config.pbtxt text
// (perf_search.h). Input is the JSON inferd's config API answers; fields are
// protobuf JSON with the proto's names.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "perf_search.h"

namespace inferd::perf {
namespace {

using rapidjson::Document;
using rapidjson::Value;

bool Parse(const std::string& json, Document& d) {
  d.Parse(json.c_str());
  return !d.HasParseError() && d.IsObject();
}

// An int64 field: a number, or (protobuf JSON) a string of digits.
long long IntField(const Value& v) {
  if (v.IsInt64()) return v.GetInt64();
  if (v.IsString()) return std::strtoll(v.GetString(), nullptr, 10);
  return 0;
}

// The instances of all groups; 1 without groups (the server's default).
int InstanceCount(const Value& d) {
  int n = 0;
  if (d.HasMember("instance_group") && d["instance_group"].IsArray()) {
    for (const auto& g : d["instance_group"].GetArray()) {
      if (g.IsObject() && g.HasMember("count")) n += int(IntField(g["count"]));
    }
  }
  return n > 0 ? n : 1;
}

// Edits `d` to `s`; whether the instance groups were replaced (they are
// left as they are when the count is unchanged, so that a layout the server
// chose stays its choice).
bool Apply(Document& d, const SearchSettings& s) {
  auto& a = d.GetAllocator();
  const long long old_max = d.HasMember("max_batch_size") ? IntField(d["max_batch_size"]) : 0;
  // Fields are set where they are, so that the edit keeps the config's order.
  if (d.HasMember("max_batch_size"))
    d["max_batch_size"].SetInt(s.max_batch_size);
  else
    d.AddMember("max_batch_size", s.max_batch_size, a);
  if (!s.dynamic_batching) {
    d.EraseMember("dynamic_batching");
  } else if (!d.HasMember("dynamic_batching") || !d["dynamic_batching"].IsObject()) {
    d.EraseMember("dynamic_batching");
    d.AddMember("dynamic_batching", Value(rapidjson::kObjectType), a);
  } else if (auto& db = d["dynamic_batching"];
             db.HasMember("preferred_batch_size") && db["preferred_batch_size"].IsArray()) {
    // Preferred sizes above the new maximum would make the config invalid;
    // [the old maximum] alone is what the server fills in for none, so it
    // goes too (the server fills in the new maximum, or batches adaptively).
    const auto& sizes = db["preferred_batch_size"];
    const bool filled_in = sizes.Size() == 1 && IntField(sizes[0]) == old_max;
    Value kept(rapidjson::kArrayType);
    for (const auto& p : sizes.GetArray()) {
      if (!filled_in && IntField(p) <= s.max_batch_size) kept.PushBack(Value(p, a), a);
    }
    db.EraseMember("preferred_batch_size");
    if (!kept.Empty()) db.AddMember("preferred_batch_size", kept, a);
  }
  if (InstanceCount(d) == s.instance_count) return false;
  Value group(rapidjson::kObjectType);
  if (d.HasMember("instance_group") && d["instance_group"].IsArray() &&
      !d["instance_group"].Empty() && d["instance_group"][0].IsObject()) {
    group.CopyFrom(d["instance_group"][0], a);
  } else {
    group.AddMember("kind", "KIND_CPU", a);
  }
  group.EraseMember("count");
  group.AddMember("count", s.instance_count, a);
  Value groups(rapidjson::kArrayType);
  groups.PushBack(group, a);
  if (d.HasMember("instance_group"))
    d["instance_group"] = groups;
  else
    d.AddMember("instance_group", groups, a);
  // The server's mark of a layout it chooses itself (instance_layout "auto":
  // docs/instance_layout.md) would override the count; without it an explicit
  // count is honoured.
  if (d.HasMember("parameters") && d["parameters"].IsObject())
    d["parameters"].EraseMember("instance_layout");
  return true;
}

// ---- protobuf text format -----------------------------------------------------

// A protobuf default (absent in text format: the same message).
bool IsDefault(const Value& v) {
  return (v.IsNumber() && v.GetDouble() == 0) || (v.IsBool() && !v.GetBool()) ||
         (v.IsString() && v.GetStringLength() == 0) || (v.IsArray() && v.Empty()) ||
         (v.IsObject() && v.MemberCount() == 0) || v.IsNull();
}

// Enum values and int64s (strings in protobuf JSON) are written bare.
bool Bare(const std::string& s) {
  if (s.empty()) return false;
  bool digits = true, upper = true;
  for (char c : s) {
    digits = digits && (std::isdigit(static_cast<unsigned char>(c)) || c == '-');
    upper = upper && (std::isupper(static_cast<unsigned char>(c)) ||
                      std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  }
  return digits || (upper && std::isupper(static_cast<unsigned char>(s[0])));
}

std::string Scalar(const Value& v) {
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsNumber()) return std::to_string(v.GetDouble());
  std::string s = v.IsString() ? v.GetString() : "";
  if (Bare(s)) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

void Message(const Value& obj, const std::string& indent, std::string& out);

// One field: `name: value`, `name: [ a, b ]`, `name { ... }`, or for a map
// (an object whose keys are not field names: priority_queue_policy) one
// `name { key: K value { ... } }` per entry.
void Field(const std::string& name, const Value& v, const std::string& indent, std::string& out) {
  if (IsDefault(v)) return;
  if (v.IsObject() && name == "priority_queue_policy") {
    for (const auto& m : v.GetObject()) {
      out += indent + name + " { key: " + m.name.GetString() + " value {\n";
      Message(m.value, indent + "  ", out);
      out += indent + "} }\n";
    }
  } else if (v.IsObject()) {
    out += indent + name + " {\n";
    Message(v, indent + "  ", out);
    out += indent + "}\n";
  } else if (v.IsArray() && v[0].IsObject()) {
    out += indent + name + " [\n";
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      out += indent + "  {\n";
      Message(v[i], indent + "    ", out);
      out += indent + (i + 1 < v.Size() ? "  },\n" : "  }\n");
    }
    out += indent + "]\n";
  } else if (v.IsArray()) {
    out += indent + name + ": [ ";
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) out += (i ? ", " : "") + Scalar(v[i]);
    out += " ]\n";
  } else {
    out += indent + name + ": " + Scalar(v) + "\n";
  }
}

void Message(const Value& obj, const std::string& indent, std::string& out) {
  for (const auto& m : obj.GetObject()) Field(m.name.GetString(), m.value, indent, out);
}

}  // namespace

bool SettingsFromConfig(const std::string& config_json, SearchSettings& out, std::string& error) {
  Document d;
  if (!Parse(config_json, d)) {
    error = "the model's config is not a JSON object";
    return false;
  }
  out.max_batch_size = d.HasMember("max_batch_size") ? int(IntField(d["max_batch_size"])) : 0;
  out.dynamic_batching = d.HasMember("dynamic_batching") && d["dynamic_batching"].IsObject();
  out.instance_count = InstanceCount(d);
  return true;
}

std::string OverrideConfig(const std::string& config_json, const SearchSettings& s) {
  Document d;
  if (!Parse(config_json, d)) d.SetObject();
  Apply(d, s);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  d.Accept(w);
  return buf.GetString();
}

std::string ConfigText(const std::string& config_json, const SearchSettings& s) {
  Document d;
  if (!Parse(config_json, d)) d.SetObject();
  const bool groups_replaced = Apply(d, s);
  std::string out = "max_batch_size: " + std::to_string(s.max_batch_size) + "\n";
  if (s.dynamic_batching) {
    const Value& db = d["dynamic_batching"];
    std::string body;
    Message(db, "  ", body);
    out += body.empty() ? "dynamic_batching { }\n" : "dynamic_batching {\n" + body + "}\n";
  }
  if (!groups_replaced) {
    out += "# instance_group: as the model has it (" + std::to_string(s.instance_count) +
           (s.instance_count == 1 ? " instance)\n" : " instances)\n");
    return out;
  }
  Value& group = d["instance_group"][0];
  // The normalized group's name is the server's; a pasted config need not carry it.
  group.EraseMember("name");
  Field("instance_group", d["instance_group"], "", out);
  return out;
}

}  // namespace inferd::perf
