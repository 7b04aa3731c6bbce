// Internal JSON helpers of libinferclient (rapidjson), not installed.
#pragma once

#include <rapidjson/document.h>

#include <string>

namespace inferd::client::detail {

// The member as a string, or "" when missing or not a string.
inline std::string StringMember(const rapidjson::Value& v, const char* key) {
  if (!v.IsObject()) return "";
  auto it = v.FindMember(key);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

// Appends the values of a (possibly nested) JSON array to `out` as the
// binary form of `datatype`; false on a value of the wrong kind.
bool JsonDataToBytes(const rapidjson::Value& data, const std::string& datatype, std::string& out);

}  // namespace inferd::client::detail
