// Version policy: which of the available versions should be loaded.
#pragma once

#include <cstdint>
#include <set>

#include "model_config.pb.h"

namespace inferd {

// latest{n}: the n largest; all: every one; specific: the listed ones that
// exist. Pure; include only from .cc files (pulls in the config proto).
std::set<int64_t> VersionsToLoad(const inference::ModelVersionPolicy& policy,
                                 const std::set<int64_t>& available);

}  // namespace inferd
