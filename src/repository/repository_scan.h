// Repository scanning on the local filesystem: pure looks at directories
// that say which models and versions exist (LocalRepositorySource is built
// on them), and the model-name rule every front end applies.
//
// Threading: free functions without state; safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd {

struct ModelLocation {
  std::string repository;  // canonical repository path
  std::string directory;   // canonical model directory
  std::string problem;     // non-empty: the model exists but may not be loaded
};

// True if `name` may name a model: non-empty, no '/', not "." or "..",
// no NUL or control characters, at most 255 bytes.
bool IsValidModelName(std::string_view name);

// Lists every model directory of one repository. A model whose name is
// invalid, or whose directory resolves outside the repository (symlink), is
// listed with a `problem`. Hidden entries (".x") and plain files are
// skipped. Errors: INVALID_ARGUMENT if the repository is missing or not a
// directory; INTERNAL if it cannot be listed.
StatusOr<std::map<std::string, ModelLocation>> ScanRepository(const std::string& repository);

// Version numbers present in a model directory: sub-directories named by a
// decimal integer without leading zeros, that stay inside the model
// directory.
std::set<int64_t> ScanVersions(const std::string& model_directory);

// A fingerprint of a model directory's content (names, sizes and mtimes of
// its files, bounded depth): equal fingerprints mean nothing changed.
std::string FingerprintModelDirectory(const std::string& model_directory);

// True if `child` is `parent` or below it (both canonical).
bool PathIsInside(const std::string& child, const std::string& parent);

}  // namespace inferd
