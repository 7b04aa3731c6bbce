#include "repository/repository_source_factory.h"

#include "repository/composite_repository_source.h"
#include "repository/local_repository_source.h"

namespace inferd {
namespace {

std::unique_ptr<RepositorySource> MakeOne(const std::string& repository) {
  return std::make_unique<LocalRepositorySource>(repository);
}

}  // namespace

std::shared_ptr<RepositorySource> MakeRepositorySource(
    const std::vector<std::string>& repositories) {
  if (repositories.size() == 1) return MakeOne(repositories[0]);
  std::vector<std::unique_ptr<RepositorySource>> children;
  children.reserve(repositories.size());
  for (const auto& repository : repositories) children.push_back(MakeOne(repository));
  return std::make_shared<CompositeRepositorySource>(std::move(children));
}

}  // namespace inferd
