// The automatic instance layout's gauges (docs/instance_layout.md,
// docs/metrics.md): for each ready version whose layout the server chooses,
// `inferd_instance_layout_active_instances` and
// `inferd_instance_layout_threads_per_instance` (labels model, version).
// Versions with a fixed instance count have no series.
//
// Pure function of its input; thread-compatible.
#pragma once

#include <vector>

#include "metrics/exposition.h"
#include "server/inference_server.h"

namespace inferd::metrics {

std::vector<MetricFamily> LayoutFamilies(const std::vector<ModelStatistics>& versions);

}  // namespace inferd::metrics
