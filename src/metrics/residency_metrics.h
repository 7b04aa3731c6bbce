// The metric families of model residency (--model-memory-budget;
// server/model_residency.h), from InferenceServer::Residency(). A server
// without a budget has none. Names and meanings: docs/residency.md.
//
// Pure function; thread-compatible.
#pragma once

#include <vector>

#include "metrics/exposition.h"
#include "server/model_residency.h"

namespace inferd::metrics {

std::vector<MetricFamily> ResidencyFamilies(const ResidencySnapshot& residency);

}  // namespace inferd::metrics
