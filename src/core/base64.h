// Standard base64 (RFC 4648 §4, with padding), as the HTTP protocol carries
// binary values such as a CUDA IPC handle ({"b64": "..."}).
//
// Errors: Base64Decode returns nullopt for a length that is not a multiple
// of 4, a character outside the alphabet, or misplaced padding.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace inferd {

std::optional<std::string> Base64Decode(std::string_view in);
std::string Base64Encode(std::string_view in);

}  // namespace inferd
