// LocalRepositorySource: a model repository in a directory of this machine
// (one --model-repository path). Models are its sub-directories; a model is
// served from where it lies (Materialize copies nothing).
//
// Listing rules (RepositorySource): hidden entries and plain files are
// skipped; a model directory with an invalid name, or that is a symbolic
// link the SymlinkRules refuse (repository_scan.h: outside every repository
// without --repository-follow-external-symlinks, dangling, a loop), is
// listed with a problem naming the link; version directories are decimal
// without leading zeros, and a refused link among them, or anywhere below
// the model, fails ListVersions and Fingerprint with a message naming it
// (the model fails to load with that reason). The repository path is
// resolved on every call, so a repository that appears or disappears while
// the server runs is seen.
//
// Threading: stateless after construction; every method is safe from any
// thread, concurrently.
#pragma once

#include <string>

#include "repository/repository_scan.h"
#include "repository/repository_source.h"

namespace inferd {

class LocalRepositorySource : public RepositorySource {
 public:
  // `repository`: the path as the command line gave it (messages quote it).
  // `rules`: which symbolic links to follow; by default, links that stay
  // inside this repository.
  explicit LocalRepositorySource(const std::string& repository);
  LocalRepositorySource(std::string repository, SymlinkRules rules);

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
  const SymlinkRules rules_;
};

}  // namespace inferd
