// Repository scanning: a pure look at the filesystem that says which models
// and versions exist. Deciding what to load from it is the manager's job.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

// Lists every model directory in `repositories`. A model found in more than
// one repository, or whose directory resolves outside its repository
// (symlink), is listed with a `problem`. Hidden entries (".x") are skipped.
// Errors if a repository path is missing or not a directory.
StatusOr<std::map<std::string, ModelLocation>> ScanRepositories(
    const std::vector<std::string>& repositories);

// Version numbers present in a model directory: sub-directories named by a
// decimal integer without leading zeros, that stay inside the model
// directory.
std::set<int64_t> ScanVersions(const std::string& model_directory);

// A fingerprint of a model directory's content (names, sizes and mtimes of
// its files, bounded depth): equal fingerprints mean nothing changed.
std::string FingerprintModelDirectory(const std::string& model_directory);

}  // namespace inferd
