// The rate limiter's view of a model config: which instances an
// `instance_group.rate_limiter` limits, with what resources and priority,
// registered with the server's RateLimiter when a version loads.
//
// Errors: what RateLimiter::Register refuses (a resource both global and
// per-device, a --rate-limit-resource capacity below a count); the message
// names the model. Stateless; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "scheduler/rate_limiter.h"

namespace inference {
class ModelConfig;
}

namespace inferd {

// One entry per instance ModelVersion creates, in its order (group, device,
// count); nullopt for instances whose group has no rate_limiter.
std::vector<std::optional<RateLimitedInstance>> RateLimitedInstances(
    const inference::ModelConfig& config, const std::string& model, int64_t version);

// Registers the limited instances of the version with `limiter`. A null
// limiter (--rate-limit=off) registers nothing; rate_limiter settings in
// the config are then ignored, as in Triton, and logged once per load.
StatusOr<RateLimitRegistration> RegisterRateLimits(const std::shared_ptr<RateLimiter>& limiter,
                                                   const inference::ModelConfig& config,
                                                   const std::string& model, int64_t version);

}  // namespace inferd
