// The model version as both protocols carry it: a string in the request
// (gRPC's `model_version` / `version` fields, HTTP's /versions/{v} path
// segment), parsed by one rule so that both answer a bad one alike.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace inferd {

// "" is -1 (the latest ready version); otherwise a decimal integer >= 0.
// Anything else (sign, spaces, overflow) is INVALID_ARGUMENT quoting it.
StatusOr<int64_t> ParseModelVersion(std::string_view version);

}  // namespace inferd
