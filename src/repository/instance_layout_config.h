// The config side of the automatic instance and thread layout
// (docs/instance_layout.md): which configs ask for it, and the instance
// count a loaded version gets.
//
// A config asks for it with the model parameter `instance_layout` = "auto",
// which normalisation adds when the config leaves the choice to the server:
// no instance_group, or one instance_group with count 0, on the CPU (KIND_CPU
// or KIND_AUTO without gpus), without a rate_limiter, on a stateless model
// (not sequence batching, not an ensemble). "fixed" keeps Triton's behaviour
// (count 0 or none: one instance). An explicit count >= 1 without the
// parameter is always honoured.
//
// At load, the layout applies only if the backend honours CPU thread hints
// (ABI v3 INFERD_BACKEND_CAP_CPU_THREAD_HINT): the group's count becomes N,
// the hardware threads (capped at kMaxAutoInstances), so that the config
// endpoint shows the instances that exist. The hardware threads are the CPUs
// of --cpu-set, by default the CPUs the process may use (ServerCpuCount in
// core/cpu_affinity.h), not the machine's. Otherwise the parameter is
// removed and the count is 1, as without it.
//
// Pure functions of their inputs; errors name the parameter.
#pragma once

#include "core/status.h"
#include "model_config.pb.h"

namespace inferd {

inline constexpr char kInstanceLayoutParameter[] = "instance_layout";
inline constexpr int kMaxAutoInstances = 16;

// Normalisation (before instance groups get their defaults): checks the
// parameter's value and adds "auto" where the config leaves the choice.
Status MarkAutomaticInstanceLayout(inference::ModelConfig& config);

// Whether a normalised config asks for the automatic layout (the
// parameter is "auto" and the config still qualifies).
bool WantsAutomaticInstanceLayout(const inference::ModelConfig& config);

// The instances an automatic layout creates (ServerCpuCount, clamped to
// 1..kMaxAutoInstances).
int AutomaticInstanceCount();

// The config a version loads with: for a config that wants the layout,
// count `instances` when `backend_honours_hints`, else count 1 and no
// parameter. Other configs unchanged.
inference::ModelConfig ResolveInstanceLayout(const inference::ModelConfig& config,
                                             bool backend_honours_hints, int instances);

}  // namespace inferd
