// RepositorySource: where models come from. The model manager sees a model
// repository only through this interface: it lists models and their
// versions, asks for a fingerprint to know whether a model changed, reads
// one file of a model (config.pbtxt) before deciding to load it, and asks for
// the model's files in a local directory when it loads it.
//
// Implementations: LocalRepositorySource (a directory on this machine),
// S3RepositorySource (an s3:// prefix, materialised into a local cache),
// ModelFilesSource (the load API's file: parameters),
// CompositeRepositorySource (several repositories as one);
// MakeRepositorySource builds them from the --model-repository strings.
//
// Threading: the listing and reading methods (ListModels, ListVersions,
// Fingerprint, ReadFile, PathsToRedact) may be called from any thread,
// concurrently with each other and with Materialize: the repository index
// lists models while a load runs. Materialize is called by one thread at a
// time (the manager's load lock). Implementations keep their own locks.
//
// Errors: a repository that cannot be listed at all fails ListModels naming
// it: a local one (missing, not a directory) with INVALID_ARGUMENT or
// INTERNAL, a remote one with the store's code (PERMISSION_DENIED, NOT_FOUND
// for a missing bucket, UNAVAILABLE, DEADLINE_EXCEEDED). A per-model call for a model the source
// does not hold is NOT_FOUND. Messages may name server paths; front ends redact PathsToRedact()
// before a client sees them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace inferd {

// One model as a source lists it.
struct ModelListing {
  // Where the model lives, for messages and logs: a canonical directory
  // path, or a URL for a remote store.
  std::string location;
  // Non-empty: the model is listed but must not be loaded, and this says
  // why ("invalid model name", "model directory resolves outside its
  // repository", "model appears in more than one model repository").
  std::string problem;
};

// Model name -> listing.
using ModelListings = std::map<std::string, ModelListing>;

class RepositorySource {
 public:
  virtual ~RepositorySource() = default;

  // Every model the source holds, hidden entries (".x") left out.
  virtual StatusOr<ModelListings> ListModels() const = 0;

  // The version numbers of a model: decimal names without leading zeros.
  // A symbolic link the source may not follow (a target outside every
  // repository without --repository-follow-external-symlinks, a dangling
  // link, a loop) fails the call with FAILED_PRECONDITION naming the link:
  // the whole model fails rather than silently losing a version.
  virtual StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const = 0;

  // An opaque summary of a model's content: equal fingerprints mean the
  // model did not change (local: names, sizes and modification times; a
  // remote store: object keys, sizes and ETags).
  virtual StatusOr<std::string> Fingerprint(const std::string& model) const = 0;

  // The content of one file of a model, `relative_path` below the model
  // (e.g. "config.pbtxt"), without materialising the model. NOT_FOUND when
  // the file does not exist; INVALID_ARGUMENT for a path that is absolute or
  // climbs out of the model ("..").
  virtual StatusOr<std::string> ReadFile(const std::string& model,
                                         const std::string& relative_path) const = 0;

  // Makes the model's files available locally and returns the directory
  // that holds them: config.pbtxt, the other top-level files (labels, ...)
  // and the directories of `versions`. A local source returns its own
  // canonical model directory and copies nothing; a remote one downloads
  // into a cache it owns. The directory stays valid until the next
  // Materialize of the same model (a loaded version may keep reading it
  // while serving, so a cache replaces it only when the content changed).
  virtual StatusOr<std::string> Materialize(const std::string& model,
                                            const std::set<int64_t>& versions) = 0;

  // Keeps `directory`, which Materialize(model, ...) returned, on disk for
  // as long as the token is held: each version loaded from it holds one, so
  // a later Materialize never removes files a serving version may read. Null
  // where a directory needs no keeping (a local repository serves in place).
  virtual std::shared_ptr<const void> Pin(const std::string& model,
                                          const std::string& directory) const {
    (void)model;
    (void)directory;
    return nullptr;
  }

  // Server paths (repository roots, a cache directory) that messages may
  // contain and clients must not see: each as given, canonical and absolute.
  virtual std::vector<std::string> PathsToRedact() const = 0;
};

}  // namespace inferd
