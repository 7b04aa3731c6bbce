// The rule for model names, shared by the repository (what may be loaded),
// the control plane (what a request may name) and inferd-discovery (what a
// host's index may publish into route and cluster names).
#pragma once

#include <string_view>

namespace inferd {

// True if `name` may name a model: 1 to 255 bytes, no '/' or '\\', not "."
// and no "..", no NUL or control characters.
bool IsValidModelName(std::string_view name);

}  // namespace inferd
