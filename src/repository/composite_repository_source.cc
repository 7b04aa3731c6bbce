#include "repository/composite_repository_source.h"

namespace inferd {

CompositeRepositorySource::CompositeRepositorySource(
    std::vector<std::unique_ptr<RepositorySource>> children)
    : children_(std::move(children)) {}

StatusOr<ModelListings> CompositeRepositorySource::ListModels() const {
  ModelListings models;
  for (const auto& child : children_) {
    auto listed = child->ListModels();
    if (!listed.ok()) return listed.status();
    for (auto& [name, listing] : *listed) {
      auto [it, inserted] = models.emplace(name, std::move(listing));
      if (!inserted) it->second.problem = "model appears in more than one model repository";
    }
  }
  return models;
}

template <typename T, typename Call>
StatusOr<T> CompositeRepositorySource::FirstHolding(const std::string& model,
                                                    const Call& call) const {
  for (const auto& child : children_) {
    StatusOr<T> answer = call(*child);
    if (answer.ok() || answer.status().code() != StatusCode::kNotFound) return answer;
  }
  return NotFound("no model '" + model + "' in the model repositories");
}

StatusOr<std::set<int64_t>> CompositeRepositorySource::ListVersions(
    const std::string& model) const {
  return FirstHolding<std::set<int64_t>>(
      model, [&](RepositorySource& s) { return s.ListVersions(model); });
}

StatusOr<std::string> CompositeRepositorySource::Fingerprint(const std::string& model) const {
  return FirstHolding<std::string>(model,
                                   [&](RepositorySource& s) { return s.Fingerprint(model); });
}

StatusOr<std::string> CompositeRepositorySource::ReadFile(const std::string& model,
                                                          const std::string& relative_path) const {
  return FirstHolding<std::string>(
      model, [&](RepositorySource& s) { return s.ReadFile(model, relative_path); });
}

StatusOr<std::string> CompositeRepositorySource::Materialize(const std::string& model,
                                                             const std::set<int64_t>& versions) {
  return FirstHolding<std::string>(
      model, [&](RepositorySource& s) { return s.Materialize(model, versions); });
}

std::shared_ptr<const void> CompositeRepositorySource::Pin(const std::string& model,
                                                           const std::string& directory) const {
  for (const auto& child : children_) {
    if (auto pin = child->Pin(model, directory)) return pin;
  }
  return nullptr;
}

std::vector<std::string> CompositeRepositorySource::PathsToRedact() const {
  std::vector<std::string> paths;
  for (const auto& child : children_) {
    auto more = child->PathsToRedact();
    paths.insert(paths.end(), more.begin(), more.end());
  }
  return paths;
}

}  // namespace inferd
