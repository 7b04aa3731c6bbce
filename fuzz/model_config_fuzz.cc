// libFuzzer target: config.pbtxt text (protobuf text format) parsed,
// normalised with Triton's defaults and turned into the core's ModelSpec,
// scheduler settings and JSON rendering, as a model load does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "repository/model_config_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = ParseModelConfigText(text, "config.pbtxt");
  if (!config.ok()) return 0;
  const std::string name = config->name().empty() ? "m" : config->name();
  if (!NormalizeModelConfig(name, NormalizeOptions{}, *config).ok()) return 0;
  ModelSpec spec = SpecFromConfig(*config);
  SchedulerConfig sched = SchedulerConfigFromConfig(*config);
  std::string json = ModelConfigToJson(*config);
  (void)spec;
  (void)sched;
  (void)json;
  return 0;
}
