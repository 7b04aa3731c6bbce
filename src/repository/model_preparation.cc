#include "repository/model_preparation.h"

#include "repository/version_policy.h"

namespace inferd {
namespace {

StatusOr<inference::ModelConfig> ReadConfig(const RepositorySource& source, const std::string& name,
                                            const std::optional<std::string>& config_json) {
  if (config_json) return ParseModelConfigJson(*config_json);
  auto text = source.ReadFile(name, "config.pbtxt");
  if (text.status().code() == StatusCode::kNotFound) {
    return NotFound("model '" + name + "' has no config.pbtxt");
  }
  // A remote store that refused or failed the read says why (access denied,
  // unreachable, timed out): "has no config.pbtxt" would send the operator
  // looking for a file that is there.
  if (!text.ok()) {
    return Status(text.status().code(),
                  "cannot read config.pbtxt of model '" + name + "': " + text.status().message());
  }
  return ParseModelConfigText(*text, name + "/config.pbtxt");
}

// Missing files and bad content stay so until the model changes; any other
// failure to read (a store's) may pass.
bool IsTransient(const Status& s) {
  return s.code() != StatusCode::kNotFound && s.code() != StatusCode::kInvalidArgument &&
         s.code() != StatusCode::kFailedPrecondition;
}

}  // namespace

PreparedConfig PrepareModel(const RepositorySource& source, const std::string& name,
                            const std::optional<std::string>& config_json,
                            const NormalizeOptions& options,
                            const PythonAutoCompleteOptions& python) {
  PreparedConfig out;
  auto config = ReadConfig(source, name, config_json);
  if (!config.ok()) {
    out.plan.error = config.status().message();
    out.plan.unreadable = true;
    out.plan.transient = IsTransient(config.status());
    return out;
  }
  out.config = std::move(*config);
  if (Status ac = PythonAutoComplete(source, name, python, out.config); !ac.ok()) {
    out.plan.error = ac.WithPrefix(name + "/config.pbtxt").message();
    return out;
  }
  NormalizeOptions normalize = options;
  normalize.warnings = &out.warnings;
  Status norm = NormalizeModelConfig(name, normalize, out.config);
  if (!norm.ok()) {
    out.plan.error = norm.WithPrefix(name + "/config.pbtxt").message();
    return out;
  }
  auto versions = source.ListVersions(name);
  if (!versions.ok()) {
    out.plan.error = versions.status().message();
    out.plan.transient = IsTransient(versions.status());
    return out;
  }
  out.plan.wanted = VersionsToLoad(out.config.version_policy(), *versions);
  return out;
}

}  // namespace inferd
