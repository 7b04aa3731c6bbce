// MakeRepositorySource: the RepositorySource for the --model-repository
// strings of the command line. The one place that knows which kinds of
// repository exist: "s3://..." (objectstore/s3_location.h) is an object
// store prefix (S3RepositorySource over an S3Client, downloading into the
// model cache), anything else a local directory path.
//
// Credentials for S3 are resolved once per call, as AWS tools resolve them
// (objectstore/aws_credentials.h), and shared by every s3:// repository;
// they never appear in a message.
//
// Threading: pure constructors; safe from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "repository/repository_fetch_metrics.h"
#include "repository/repository_source.h"

namespace inferd {

struct RepositorySourceOptions {
  // --repository-follow-external-symlinks: follow symbolic links whose
  // target lies outside every repository (repository_scan.h); links into any
  // repository are always followed. Local repositories only.
  bool follow_external_symlinks = false;
  // --model-cache-dir: where remote repositories' models are downloaded;
  // empty: DefaultModelCacheDirectory().
  std::string model_cache_dir;
  // --s3-addressing=virtual: virtual-hosted requests (<bucket>.<endpoint>)
  // instead of path-style.
  bool s3_virtual_hosted = false;
  // Counters of the remote repositories (may be null).
  std::shared_ptr<RepositoryFetchMetrics> metrics;
};

// One source for one repository, a CompositeRepositorySource over all of
// them for several (none: a source that lists nothing). Never fails: a
// repository that cannot be used (a missing directory, an s3:// URL that
// does not parse, credentials that cannot be read, a store that cannot be
// reached) fails the source's ListModels with the reason, at start-up and
// on every later listing.
std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       const RepositorySourceOptions& options);
std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       bool follow_external_symlinks = false);

// "<system temp dir>/inferd-model-cache-<uid>": a fixed name, so that a restarted
// server finds what it downloaded before.
std::string DefaultModelCacheDirectory();

// What can be known about a repository string before the server starts,
// without the network: a local path is a readable directory
// (CheckRepositoryPath); an s3:// URL parses and credentials can be
// resolved. INVALID_ARGUMENT naming the problem otherwise. On success,
// `description` (if not null) says, for the log, where an s3:// repository's
// credentials come from and its region (never a secret).
Status CheckRepositoryString(const std::string& repository, std::string* description = nullptr);

}  // namespace inferd
