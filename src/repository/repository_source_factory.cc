#include "repository/repository_source_factory.h"

#include "repository/composite_repository_source.h"
#include "repository/local_repository_source.h"

namespace inferd {
namespace {

std::unique_ptr<RepositorySource> MakeOne(const std::string& repository,
                                          const SymlinkRules& rules) {
  return std::make_unique<LocalRepositorySource>(repository, rules);
}

}  // namespace

std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       bool follow_external_symlinks) {
  // Every repository's links may lead into any of the others.
  const SymlinkRules rules(repositories, follow_external_symlinks);
  if (repositories.size() == 1) return MakeOne(repositories[0], rules);
  std::vector<std::unique_ptr<RepositorySource>> children;
  children.reserve(repositories.size());
  for (const auto& repository : repositories) children.push_back(MakeOne(repository, rules));
  return std::make_shared<CompositeRepositorySource>(std::move(children));
}

}  // namespace inferd
