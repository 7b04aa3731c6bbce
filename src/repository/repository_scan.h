// Repository scanning on the local filesystem: pure looks at directories
// that say which models and versions exist (LocalRepositorySource is built
// on them), the symbolic-link rule and the check of a repository path. The
// model-name rule every front end applies is core/model_name.h.
//
// Symbolic links (model directories, version directories, files or
// directories anywhere below a model) are followed when their fully resolved
// target lies inside one of the server's repositories. A link whose target
// lies outside every repository is followed only with
// --repository-follow-external-symlinks=true; a dangling link, or one that
// cannot be resolved (a loop), is never followed. Each refusal is a message
// naming the link, which becomes the model's reason. Link loops cannot hang
// a scan: resolution fails with ELOOP, and a walk visits each directory once.
//
// Threading: free functions and immutable values; safe from any thread.
// Nothing here is cached: each call looks at the filesystem again, so a
// repository or link that changes while the server runs is seen.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_name.h"  // IsValidModelName, used with the scan
#include "core/status.h"

namespace inferd {

// Which symbolic links scans follow.
class SymlinkRules {
 public:
  // `repositories`: every repository of the server, as given (resolved again
  // on each check, since a repository may appear later). `follow_external`:
  // --repository-follow-external-symlinks.
  SymlinkRules(std::vector<std::string> repositories, bool follow_external);

  // Empty when the symbolic link `link` may be followed; otherwise why not,
  // naming the link as `shown` (e.g. "version directory '1'"), its target,
  // and the flag when the flag would allow it.
  std::string Check(const std::string& link, const std::string& shown) const;

  const std::vector<std::string>& repositories() const { return repositories_; }
  bool follow_external() const { return follow_external_; }

 private:
  std::vector<std::string> repositories_;
  bool follow_external_;
};

struct ModelLocation {
  std::string repository;  // canonical repository path
  std::string directory;   // canonical model directory (the entry's path if unresolvable)
  std::string problem;     // non-empty: the model exists but may not be loaded
};

// OK when `repository` names a directory this process can list. Otherwise
// INVALID_ARGUMENT naming the path and why: it does not exist, is not a
// directory, or cannot be read (with the system's reason).
Status CheckRepositoryPath(const std::string& repository);

// Lists every model directory of one repository. A model whose name is
// invalid, or whose directory is a symbolic link `rules` refuses (outside
// every repository without the flag, dangling, a loop), is listed with a
// `problem`. Hidden entries (".x") and plain files are skipped. Errors:
// CheckRepositoryPath's; INTERNAL if listing fails midway.
StatusOr<std::map<std::string, ModelLocation>> ScanRepository(const std::string& repository,
                                                              const SymlinkRules& rules);

// The model `name` of the canonical repository `root`, as ScanRepository
// would list it; `directory` is empty when there is no such directory.
ModelLocation LocateModel(const std::string& root, const std::string& name,
                          const SymlinkRules& rules);

// A version directory's name as a number: decimal, no sign, no leading
// zeros ("0" is version 0); nullopt for anything else.
std::optional<int64_t> ParseVersionName(std::string_view name);

// Version numbers present in a model directory: sub-directories named by a
// decimal integer without leading zeros. FAILED_PRECONDITION naming the
// link when a version directory is a symbolic link `rules` refuses.
StatusOr<std::set<int64_t>> ScanVersions(const std::string& model_directory,
                                         const SymlinkRules& rules);

// A fingerprint of a model directory's content: names, sizes and mtimes of
// its files, the text of its symbolic links, and what followed links lead
// to (bounded depth and size). Equal fingerprints mean nothing changed; a
// link pointed elsewhere changes it. FAILED_PRECONDITION naming the link
// when any symbolic link below the model is one `rules` refuses.
StatusOr<std::string> FingerprintModelDirectory(const std::string& model_directory,
                                                const SymlinkRules& rules);

// True if `child` is `parent` or below it (both canonical).
bool PathIsInside(const std::string& child, const std::string& parent);

}  // namespace inferd
