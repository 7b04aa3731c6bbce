// ModelFilesSource: a RepositorySource holding one model, whose files came
// with the load call (model_files.h) instead of from a repository. The
// model manager plans and loads an override through it exactly as it does
// for a repository model: the listing is that one model, its versions are
// the version directories of the files, and Materialize answers the
// private directory they were written to.
//
// Ownership: shares the directory; the manager keeps it alive as long as a
// version loaded from it is (model_manager.cc).
// Threading: immutable; safe from any thread.
#pragma once

#include <memory>
#include <string>

#include "repository/model_files.h"
#include "repository/repository_source.h"

namespace inferd {

class ModelFilesSource : public RepositorySource {
 public:
  ModelFilesSource(std::string model, std::shared_ptr<const ModelFileDirectory> files)
      : model_(std::move(model)), files_(std::move(files)) {}

  StatusOr<ModelListings> ListModels() const override;
  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override;
  // Unique to this directory: a later load of the same files is a reload.
  StatusOr<std::string> Fingerprint(const std::string& model) const override;
  StatusOr<std::string> ReadFile(const std::string& model,
                                 const std::string& relative_path) const override;
  StatusOr<std::string> Materialize(const std::string& model,
                                    const std::set<int64_t>& versions) override;
  // The directory (a temporary path clients need not see).
  std::vector<std::string> PathsToRedact() const override;

  const std::shared_ptr<const ModelFileDirectory>& files() const { return files_; }

 private:
  Status Check(const std::string& model) const;

  const std::string model_;
  const std::shared_ptr<const ModelFileDirectory> files_;
};

}  // namespace inferd
