// LocalRepositorySource: a model repository in a directory of this machine
// (one --model-repository path). Models are its sub-directories; a model is
// served from where it lies (Materialize copies nothing).
//
// Listing rules (RepositorySource): hidden entries and plain files are
// skipped; a model directory that resolves outside the repository (a
// symlink) or has an invalid name is listed with a problem; version
// directories are decimal without leading zeros and must stay inside the
// model. The repository path is resolved on every call, so a repository
// that appears or disappears while the server runs is seen.
//
// Threading: stateless after construction; every method is safe from any
// thread, concurrently.
#pragma once

#include <string>

#include "repository/repository_source.h"

namespace inferd {

class LocalRepositorySource : public RepositorySource {
 public:
  // `repository`: the path as the command line gave it (messages quote it).
  explicit LocalRepositorySource(std::string repository);

  StatusOr<ModelListings> ListModels() const override;
  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override;
  StatusOr<std::string> Fingerprint(const std::string& model) const override;
  StatusOr<std::string> ReadFile(const std::string& model,
                                 const std::string& relative_path) const override;
  StatusOr<std::string> Materialize(const std::string& model,
                                    const std::set<int64_t>& versions) override;
  std::vector<std::string> PathsToRedact() const override;

 private:
  // The canonical directory of a model that ListModels would list without
  // a problem; NOT_FOUND otherwise.
  StatusOr<std::string> ModelDirectory(const std::string& model) const;

  const std::string repository_;
};

}  // namespace inferd
