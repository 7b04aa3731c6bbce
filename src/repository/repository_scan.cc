#include "repository/repository_scan.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

namespace inferd {
namespace fs = std::filesystem;

namespace {

constexpr char kFollowFlag[] = "--repository-follow-external-symlinks=true";
// Bounds of a fingerprint walk: model trees are small, and a bound keeps a
// pathological one (or a link farm) from stalling a poll.
constexpr int kMaxWalkDepth = 8;
constexpr int kMaxWalkEntries = 10000;

// A symbolic link the rules refuse: the model cannot be loaded as it is.
Status Refused(std::string problem) {
  return Status(StatusCode::kFailedPrecondition, std::move(problem));
}

bool IsInside(const fs::path& child, const fs::path& parent) {
  auto c = child.begin();
  for (auto p = parent.begin(); p != parent.end(); ++p, ++c) {
    if (c == child.end() || *c != *p) return false;
  }
  return true;
}

bool IsSymlink(const fs::path& path) {
  std::error_code ec;
  return fs::is_symlink(fs::symlink_status(path, ec));
}

// The entries of a directory, sorted so that a fingerprint does not depend on
// the order the filesystem lists them in. Unlistable: empty.
std::vector<fs::path> SortedEntries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One fingerprint walk below a model directory.
class ModelWalk {
 public:
  explicit ModelWalk(const SymlinkRules& rules) : rules_(rules) {}

  // Appends `dir`'s content to the fingerprint; the first refused link ends
  // the walk with its message.
  Status Walk(const fs::path& dir, const std::string& prefix, int depth) {
    std::error_code ec;
    if (!visited_.insert(fs::canonical(dir, ec).string()).second) {
      fp_ += prefix + " (already seen)\n";  // a link back up the tree
      return Status::Ok();
    }
    for (const fs::path& path : SortedEntries(dir)) {
      if (++seen_ > kMaxWalkEntries) return Status::Ok();
      const std::string rel = prefix + path.filename().string();
      fp_ += rel;
      if (IsSymlink(path)) {
        const bool version = depth == 0 && ParseVersionName(path.filename().string());
        std::string problem = rules_.Check(
            path.string(), (version ? "version directory '" : "symbolic link '") + rel + "'");
        if (!problem.empty()) return Refused(problem);
        fp_ += " -> " + fs::read_symlink(path, ec).string();
      }
      const fs::file_status st = fs::status(path, ec);
      if (fs::is_regular_file(st)) {
        fp_ += ":" + std::to_string(fs::file_size(path, ec));
        fp_ += ":" + std::to_string(fs::last_write_time(path, ec).time_since_epoch().count());
      }
      fp_ += "\n";
      if (fs::is_directory(st) && depth < kMaxWalkDepth) {
        INFERD_RETURN_IF_ERROR(Walk(path, rel + "/", depth + 1));
      }
    }
    return Status::Ok();
  }

  std::string Take() { return std::move(fp_); }

 private:
  const SymlinkRules& rules_;
  std::set<std::string> visited_;  // canonical directories walked
  std::string fp_;
  int seen_ = 0;
};

}  // namespace

SymlinkRules::SymlinkRules(std::vector<std::string> repositories, bool follow_external)
    : repositories_(std::move(repositories)), follow_external_(follow_external) {}

std::string SymlinkRules::Check(const std::string& link, const std::string& shown) const {
  std::error_code ec;
  const std::string text = fs::read_symlink(link, ec).string();
  const fs::path target = fs::canonical(link, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return shown + " is a symbolic link to '" + text + "', which does not exist";
  }
  if (ec) {
    return shown + " is a symbolic link to '" + text + "' that cannot be resolved (" +
           ec.message() + ")";
  }
  if (follow_external_) return "";
  for (const auto& repository : repositories_) {
    const fs::path root = fs::canonical(repository, ec);
    if (!ec && IsInside(target, root)) return "";
  }
  return shown + " is a symbolic link to '" + target.string() +
         "', outside every model repository; start inferd with " + kFollowFlag + " to follow it";
}

Status CheckRepositoryPath(const std::string& repository) {
  const std::string quoted = "model repository '" + repository + "'";
  struct stat st {};
  if (repository.empty()) return InvalidArgument("model repository path is empty");
  if (::stat(repository.c_str(), &st) != 0) {
    if (errno == ENOENT) return InvalidArgument(quoted + " does not exist");
    return InvalidArgument("cannot access " + quoted + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return InvalidArgument(quoted + " is not a directory");
  // Listing needs read permission, entering the models search permission.
  DIR* dir = ::opendir(repository.c_str());
  if (dir == nullptr || ::access(repository.c_str(), R_OK | X_OK) != 0) {
    const int err = errno;
    if (dir != nullptr) ::closedir(dir);
    return InvalidArgument("cannot read " + quoted + ": " + std::strerror(err));
  }
  ::closedir(dir);
  return Status::Ok();
}

ModelLocation LocateModel(const std::string& root, const std::string& name,
                          const SymlinkRules& rules) {
  ModelLocation loc;
  loc.repository = root;
  const fs::path entry = fs::path(root) / name;
  std::error_code ec;
  if (IsSymlink(entry)) {
    loc.problem = rules.Check(entry.string(), "model directory '" + name + "'");
    if (!loc.problem.empty()) {
      // A refused link to a plain file is not a model at all.
      if (fs::exists(entry, ec) && !fs::is_directory(entry, ec)) loc.problem.clear();
      if (!loc.problem.empty()) loc.directory = entry.string();
      return loc;
    }
  }
  if (!fs::is_directory(entry, ec)) return loc;
  loc.directory = fs::canonical(entry, ec).string();
  if (ec) loc.directory = entry.string();
  if (!IsValidModelName(name)) loc.problem = "invalid model name";
  return loc;
}

StatusOr<std::map<std::string, ModelLocation>> ScanRepository(const std::string& repository,
                                                              const SymlinkRules& rules) {
  INFERD_RETURN_IF_ERROR(CheckRepositoryPath(repository));
  std::map<std::string, ModelLocation> models;
  std::error_code ec;
  const fs::path root = fs::canonical(repository, ec);
  if (ec) return InvalidArgument("model repository '" + repository + "': " + ec.message());
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    ModelLocation loc = LocateModel(root.string(), name, rules);
    if (!loc.directory.empty()) models.emplace(name, std::move(loc));
  }
  if (ec) return Internal("failed to list model repository '" + repository + "'");
  return models;
}

std::optional<int64_t> ParseVersionName(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

StatusOr<std::set<int64_t>> ScanVersions(const std::string& model_directory,
                                         const SymlinkRules& rules) {
  std::set<int64_t> versions;
  std::error_code ec;
  for (const fs::path& path : SortedEntries(model_directory)) {
    const std::string name = path.filename().string();
    auto v = ParseVersionName(name);
    if (!v) continue;
    if (IsSymlink(path)) {
      std::string problem = rules.Check(path.string(), "version directory '" + name + "'");
      if (!problem.empty()) return Refused(problem);
    }
    if (fs::is_directory(path, ec)) versions.insert(*v);
  }
  return versions;
}

StatusOr<std::string> FingerprintModelDirectory(const std::string& model_directory,
                                                const SymlinkRules& rules) {
  ModelWalk walk(rules);
  INFERD_RETURN_IF_ERROR(walk.Walk(model_directory, "", 0));
  return walk.Take();
}

bool PathIsInside(const std::string& child, const std::string& parent) {
  return IsInside(fs::path(child), fs::path(parent));
}

}  // namespace inferd
