#include "repository/rate_limit_config.h"

#include "core/log.h"
#include "core/sanitize.h"
#include "model_config.pb.h"

namespace inferd {

std::vector<std::optional<RateLimitedInstance>> RateLimitedInstances(
    const inference::ModelConfig& config, const std::string& model, int64_t version) {
  std::vector<std::optional<RateLimitedInstance>> out;
  // The same walk as ModelVersion's CreateInstances: group, device, count.
  for (const auto& group : config.instance_group()) {
    std::vector<int> devices;
    if (group.kind() == inference::ModelInstanceGroup::KIND_GPU) {
      devices.assign(group.gpus().begin(), group.gpus().end());
    } else {
      devices.push_back(0);
    }
    for (int device : devices) {
      for (int i = 0; i < group.count(); ++i) {
        const std::string name = group.name() + "_" + std::to_string(out.size());
        if (!group.has_rate_limiter()) {
          out.emplace_back();
          continue;
        }
        RateLimitedInstance inst;
        inst.model = model;
        inst.version = version;
        inst.instance = name;
        inst.device = device;
        inst.priority = group.rate_limiter().priority();
        for (const auto& r : group.rate_limiter().resources()) {
          inst.resources.push_back(RateLimitResource{r.name(), r.global(), r.count()});
        }
        out.emplace_back(std::move(inst));
      }
    }
  }
  return out;
}

StatusOr<RateLimitRegistration> RegisterRateLimits(const std::shared_ptr<RateLimiter>& limiter,
                                                   const inference::ModelConfig& config,
                                                   const std::string& model, int64_t version) {
  auto instances = RateLimitedInstances(config, model, version);
  std::vector<RateLimitedInstance> limited;
  for (const auto& i : instances) {
    if (i) limited.push_back(*i);
  }
  if (limited.empty()) return RateLimitRegistration();
  if (!limiter) {
    INFERD_LOG(Info) << "model '" << EscapeControl(model) << "' version " << version
                     << ": instance_group rate_limiter settings are ignored (--rate-limit=off)";
    return RateLimitRegistration();
  }
  auto ids = limiter->Register(limited);
  if (!ids.ok()) return ids.status();
  std::vector<RateLimiter::Id> by_instance(instances.size(), 0);
  size_t next = 0;
  for (size_t k = 0; k < instances.size(); ++k) {
    if (instances[k]) by_instance[k] = (*ids)[next++];
  }
  return RateLimitRegistration(limiter, std::move(by_instance));
}

}  // namespace inferd
