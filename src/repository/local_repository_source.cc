#include "repository/local_repository_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "repository/repository_scan.h"

namespace inferd {
namespace fs = std::filesystem;

LocalRepositorySource::LocalRepositorySource(std::string repository)
    : repository_(std::move(repository)) {}

StatusOr<ModelListings> LocalRepositorySource::ListModels() const {
  auto scan = ScanRepository(repository_);
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
  const fs::path dir = fs::canonical(root / model, ec);
  if (ec || !fs::is_directory(dir, ec) || !PathIsInside(dir.string(), root.string())) {
    return not_found();
  }
  return dir.string();
}

StatusOr<std::set<int64_t>> LocalRepositorySource::ListVersions(const std::string& model) const {
  auto dir = ModelDirectory(model);
  if (!dir.ok()) return dir.status();
  return ScanVersions(*dir);
}

StatusOr<std::string> LocalRepositorySource::Fingerprint(const std::string& model) const {
  auto dir = ModelDirectory(model);
  if (!dir.ok()) return dir.status();
  return FingerprintModelDirectory(*dir);
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
