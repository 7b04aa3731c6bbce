// CompositeRepositorySource: several repositories (several
// --model-repository flags) seen as one. The listing is the union of the
// children's listings; a name found in more than one child is listed once,
// with the problem "model appears in more than one model repository", so it
// is never loaded from either.
//
// Per-model calls go to each child in the order given until one answers
// other than NOT_FOUND (the manager never asks about a listed duplicate, so
// that is the one child holding the model); NOT_FOUND when none does.
//
// Threading: no state of its own besides the children, which are fixed at
// construction; thread-safe as far as the children are (RepositorySource's
// contract).
#pragma once

#include <memory>
#include <vector>

#include "repository/repository_source.h"

namespace inferd {

class CompositeRepositorySource : public RepositorySource {
 public:
  explicit CompositeRepositorySource(std::vector<std::unique_ptr<RepositorySource>> children);

  // Fails with the first child's error, in order, when a child cannot list.
  StatusOr<ModelListings> ListModels() const override;
  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override;
  StatusOr<std::string> Fingerprint(const std::string& model) const override;
  StatusOr<std::string> ReadFile(const std::string& model,
                                 const std::string& relative_path) const override;
  StatusOr<std::string> Materialize(const std::string& model,
                                    const std::set<int64_t>& versions) override;
  // The pin of the child that made `directory` (the first non-null one).
  std::shared_ptr<const void> Pin(const std::string& model,
                                  const std::string& directory) const override;
  std::vector<std::string> PathsToRedact() const override;

 private:
  // Calls `call` on each child in turn until one answers other than
  // NOT_FOUND; that answer, or NOT_FOUND naming the model.
  template <typename T, typename Call>
  StatusOr<T> FirstHolding(const std::string& model, const Call& call) const;

  const std::vector<std::unique_ptr<RepositorySource>> children_;
};

}  // namespace inferd
