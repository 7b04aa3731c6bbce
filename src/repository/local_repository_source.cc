#include "repository/local_repository_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "repository/repository_scan.h"

namespace inferd {
namespace fs = std::filesystem;

LocalRepositorySource::LocalRepositorySource(const std::string& repository)
    : LocalRepositorySource(repository, SymlinkRules({repository}, false)) {}

LocalRepositorySource::LocalRepositorySource(std::string repository, SymlinkRules rules)
    : repository_(std::move(repository)), rules_(std::move(rules)) {}

StatusOr<ModelListings> LocalRepositorySource::ListModels() const {
  auto scan = ScanRepository(repository_, rules_);
  if (!scan.ok()) return scan.status();
  ModelListings out;
  for (auto& [name, loc] : *scan) {
    out.emplace(name, ModelListing{std::move(loc.directory), std::move(loc.problem)});
  }
  return out;
}

StatusOr<std::string> LocalRepositorySource::ModelDirectory(const std::string& model) const {
  auto not_found = [&] {
    return NotFound("no model '" + model + "' in model repository '" + repository_ + "'");
  };
  if (!IsValidModelName(model) || model[0] == '.') return not_found();
  std::error_code ec;
  const fs::path root = fs::canonical(repository_, ec);
  if (ec) return not_found();
  ModelLocation loc = LocateModel(root.string(), model, rules_);
  if (loc.directory.empty() || !loc.problem.empty()) return not_found();
  return loc.directory;
}

StatusOr<std::set<int64_t>> LocalRepositorySource::ListVersions(const std::string& model) const {
  auto dir = ModelDirectory(model);
  if (!dir.ok()) return dir.status();
  return ScanVersions(*dir, rules_);
}

StatusOr<std::string> LocalRepositorySource::Fingerprint(const std::string& model) const {
  auto dir = ModelDirectory(model);
  if (!dir.ok()) return dir.status();
  return FingerprintModelDirectory(*dir, rules_);
}

StatusOr<std::string> LocalRepositorySource::ReadFile(const std::string& model,
                                                      const std::string& relative_path) const {
  const fs::path rel(relative_path);
  bool climbs = false;
  for (const auto& part : rel) climbs = climbs || part == "..";
  if (relative_path.empty() || rel.is_absolute() || climbs) {
    return InvalidArgument("file path '" + relative_path + "' must stay inside the model");
  }
  auto dir = ModelDirectory(model);
  if (!dir.ok()) return dir.status();
  // Each link on the way is checked, as the model's scan checks them.
  fs::path walked(*dir);
  std::string shown;
  for (const auto& part : rel) {
    walked /= part;
    shown += (shown.empty() ? "" : "/") + part.string();
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(walked, ec))) continue;
    std::string problem = rules_.Check(walked.string(), "symbolic link '" + shown + "'");
    if (!problem.empty()) return Status(StatusCode::kFailedPrecondition, std::move(problem));
  }
  const std::string path = *dir + "/" + relative_path;
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

StatusOr<std::string> LocalRepositorySource::Materialize(const std::string& model,
                                                         const std::set<int64_t>&) {
  return ModelDirectory(model);
}

std::vector<std::string> LocalRepositorySource::PathsToRedact() const {
  std::vector<std::string> paths = {repository_};
  std::error_code ec;
  auto full = fs::weakly_canonical(repository_, ec);
  if (!ec) paths.push_back(full.string());
  auto abs = fs::absolute(repository_, ec);
  if (!ec) paths.push_back(abs.lexically_normal().string());
  return paths;
}

}  // namespace inferd
