#include "repository/instance_layout_config.h"

#include <algorithm>

#include "core/cpu_affinity.h"

namespace inferd {
namespace {

// A stateless CPU model with at most one instance group, unlimited.
bool Qualifies(const inference::ModelConfig& c) {
  if (c.platform() == "ensemble" || c.has_sequence_batching()) return false;
  if (c.instance_group_size() == 0) return true;
  if (c.instance_group_size() != 1) return false;
  const auto& g = c.instance_group(0);
  const bool cpu = g.kind() == inference::ModelInstanceGroup::KIND_CPU ||
                   (g.kind() == inference::ModelInstanceGroup::KIND_AUTO && g.gpus_size() == 0);
  return cpu && !g.has_rate_limiter();
}

}  // namespace

Status MarkAutomaticInstanceLayout(inference::ModelConfig& c) {
  auto& params = *c.mutable_parameters();
  if (auto it = params.find(kInstanceLayoutParameter); it != params.end()) {
    const std::string& v = it->second.string_value();
    if (v != "auto" && v != "fixed") {
      return InvalidArgument(std::string("parameter '") + kInstanceLayoutParameter +
                             "' must be 'auto' or 'fixed', got '" + v.substr(0, 64) + "'");
    }
    return Status::Ok();
  }
  const bool leaves_choice = c.instance_group_size() == 0 ||
                             (c.instance_group_size() == 1 && c.instance_group(0).count() < 1);
  if (leaves_choice && Qualifies(c)) {
    params[kInstanceLayoutParameter].set_string_value("auto");
  }
  return Status::Ok();
}

bool WantsAutomaticInstanceLayout(const inference::ModelConfig& c) {
  auto it = c.parameters().find(kInstanceLayoutParameter);
  return it != c.parameters().end() && it->second.string_value() == "auto" && Qualifies(c);
}

int AutomaticInstanceCount() {
  // The CPUs of --cpu-set (by default the allowed ones: a container's
  // cpuset), not the machine's (core/cpu_affinity.h).
  return std::clamp(ServerCpuCount(), 1, kMaxAutoInstances);
}

inference::ModelConfig ResolveInstanceLayout(const inference::ModelConfig& config,
                                             bool backend_honours_hints, int instances) {
  inference::ModelConfig c = config;
  if (!WantsAutomaticInstanceLayout(c)) return c;
  if (c.instance_group_size() == 0) c.add_instance_group()->set_name(c.name());
  if (backend_honours_hints) {
    c.mutable_instance_group(0)->set_count(std::max(1, instances));
  } else {
    c.mutable_instance_group(0)->set_count(1);
    c.mutable_parameters()->erase(kInstanceLayoutParameter);
  }
  return c;
}

}  // namespace inferd
