// MakeRepositorySource: the RepositorySource for the --model-repository
// strings of the command line. The one place that knows which kinds of
// repository exist: today every string is a local directory path.
//
// Threading: a pure constructor; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "repository/repository_source.h"

namespace inferd {

// One source for one repository, a CompositeRepositorySource over all of
// them for several (none: a source that lists nothing). Never fails: a
// repository that cannot be used fails the source's ListModels with the
// reason, at start-up and on every later listing, as a missing directory
// does. `follow_external_symlinks` (--repository-follow-external-symlinks):
// follow symbolic links whose target lies outside every repository
// (repository_scan.h); links into any of `repositories` are always followed.
std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       bool follow_external_symlinks = false);

}  // namespace inferd
