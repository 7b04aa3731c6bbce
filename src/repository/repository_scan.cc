#include "repository/repository_scan.h"

#include <charconv>
#include <filesystem>

namespace inferd {
namespace fs = std::filesystem;

namespace {

bool IsInside(const fs::path& child, const fs::path& parent) {
  auto c = child.begin();
  for (auto p = parent.begin(); p != parent.end(); ++p, ++c) {
    if (c == child.end() || *c != *p) return false;
  }
  return true;
}

std::optional<int64_t> ParseVersion(const std::string& s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

bool IsValidModelName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char ch : name) {
    if (ch == '/' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return false;
    }
  }
  return name.find("..") == std::string_view::npos;
}

StatusOr<std::map<std::string, ModelLocation>> ScanRepository(const std::string& repository) {
  std::map<std::string, ModelLocation> models;
  std::error_code ec;
  const fs::path root = fs::canonical(repository, ec);
  if (ec || !fs::is_directory(root, ec)) {
    return InvalidArgument("model repository '" + repository + "' is not a directory");
  }
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (!entry.is_directory(ec)) continue;
    ModelLocation loc;
    loc.repository = root.string();
    const fs::path dir = fs::canonical(entry.path(), ec);
    loc.directory = ec ? entry.path().string() : dir.string();
    if (!IsValidModelName(name)) {
      loc.problem = "invalid model name";
    } else if (ec || !IsInside(dir, root)) {
      loc.problem = "model directory resolves outside its repository";
    }
    models.emplace(name, std::move(loc));
  }
  if (ec) return Internal("failed to list model repository '" + repository + "'");
  return models;
}

std::set<int64_t> ScanVersions(const std::string& model_directory) {
  std::set<int64_t> versions;
  std::error_code ec;
  const fs::path root(model_directory);
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    auto v = ParseVersion(entry.path().filename().string());
    if (!v) continue;
    const fs::path dir = fs::canonical(entry.path(), ec);
    if (ec || !IsInside(dir, root)) continue;
    versions.insert(*v);
  }
  return versions;
}

std::string FingerprintModelDirectory(const std::string& model_directory) {
  std::string fp;
  std::error_code ec;
  auto it = fs::recursive_directory_iterator(model_directory, ec);
  int seen = 0;
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (++seen > 10000) break;  // a bound: repositories are small trees
    if (it.depth() > 3) {
      it.disable_recursion_pending();
      continue;
    }
    const auto& e = *it;
    fp += e.path().lexically_relative(model_directory).string();
    if (e.is_regular_file(ec)) {
      fp += ":" + std::to_string(e.file_size(ec));
      fp += ":" + std::to_string(e.last_write_time(ec).time_since_epoch().count());
    }
    fp += "\n";
  }
  return fp;
}

bool PathIsInside(const std::string& child, const std::string& parent) {
  return IsInside(fs::path(child), fs::path(parent));
}

}  // namespace inferd
