#include "repository/model_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/sanitize.h"

namespace inferd {
namespace {

constexpr size_t kMaxPathBytes = 1024;
constexpr size_t kMaxComponentBytes = 255;  // NAME_MAX
constexpr size_t kMaxVersionDigits = 18;    // fits int64

Status BadPath(std::string_view path, const std::string& problem) {
  return InvalidArgument("invalid load parameter '" + std::string(kModelFilePrefix) +
                         Bounded(path) + "': " + problem);
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

bool IsVersion(std::string_view s) {
  if (s.empty() || s.size() > kMaxVersionDigits || (s.size() > 1 && s[0] == '0')) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status WriteError(const std::string& path, const char* what) {
  return Internal("could not write model file '" + Bounded(path) + "': " + what + ": " +
                  std::strerror(errno));
}

// Opens (making it first if needed) the directory `name` below `parent`,
// never following a link.
int OpenSubdirectory(int parent, const std::string& name) {
  if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return -1;
  return ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

Status WriteAll(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Internal(std::strerror(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Writes one checked file below the directory `root` (a descriptor).
Status WriteFile(int root, const std::string& path, const std::string& content) {
  std::vector<std::string_view> parts = Components(path);
  std::vector<Fd> opened;  // each directory on the way, closed at the end
  int at = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    at = opened.emplace_back(OpenSubdirectory(at, std::string(parts[i]))).get();
    if (at < 0) return WriteError(path, "directory");
  }
  Fd file(::openat(at, std::string(parts.back()).c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (file.get() < 0) return WriteError(path, "create");
  if (Status s = WriteAll(file.get(), content); !s.ok()) return WriteError(path, "write");
  if (::close(file.release()) != 0) return WriteError(path, "close");
  return Status::Ok();
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // removes links, never follows them
  if (ec) {
    INFERD_LOG(Warning) << "could not remove the model file directory " << EscapeControl(path)
                        << ": " << ec.message();
  }
}

}  // namespace

Status CheckModelFilePath(std::string_view path) {
  if (path.empty()) return BadPath(path, "the path is empty");
  if (path.size() > kMaxPathBytes) {
    return BadPath(path, "the path is longer than " + std::to_string(kMaxPathBytes) + " bytes");
  }
  if (path.front() == '/') return BadPath(path, "absolute paths are not allowed");
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') {
      return BadPath(path, "control characters and '\\' are not allowed");
    }
  }
  std::vector<std::string_view> parts = Components(path);
  for (std::string_view part : parts) {
    if (part.empty())
      return BadPath(path, "empty path component (a leading, doubled or trailing '/')");
    if (part == "." || part == "..")
      return BadPath(path, "'.' and '..' components are not allowed");
    if (part.size() > kMaxComponentBytes) {
      return BadPath(
          path, "a path component is longer than " + std::to_string(kMaxComponentBytes) + " bytes");
    }
  }
  if (!IsVersion(parts[0])) {
    return BadPath(path,
                   "the first path component must be a version number (a non-negative "
                   "decimal integer without leading zeros)");
  }
  if (parts.size() < 2) {
    return BadPath(path,
                   "the path must name a file inside a version directory "
                   "('file:<version>/<path>')");
  }
  return Status::Ok();
}

Status CheckModelFiles(const ModelFiles& files) {
  if (files.size() > kMaxModelFiles) {
    return InvalidArgument("too many model files in one load: " + std::to_string(files.size()) +
                           ", at most " + std::to_string(kMaxModelFiles));
  }
  for (const auto& [path, content] : files) INFERD_RETURN_IF_ERROR(CheckModelFilePath(path));
  // Sorted: the paths below "a/" (if any) follow "a" after those of "a" +
  // characters below '/', so look the directory prefix up directly.
  for (const auto& [path, content] : files) {
    auto below = files.lower_bound(path + "/");
    if (below != files.end() && below->first.compare(0, path.size() + 1, path + "/") == 0) {
      return BadPath(path, "the path is both a file and the directory of '" +
                               std::string(kModelFilePrefix) + Bounded(below->first) + "'");
    }
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<const ModelFileDirectory>> ModelFileDirectory::Write(
    const ModelFiles& files) {
  INFERD_RETURN_IF_ERROR(CheckModelFiles(files));
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/inferd-model-files-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Internal(std::string("could not make a directory for model files: ") +
                    std::strerror(errno));
  }
  char* real = ::realpath(pattern.c_str(), nullptr);
  std::string path = real != nullptr ? real : pattern;
  std::free(real);  // NOLINT(cppcoreguidelines-no-malloc): realpath's buffer
  Status written;
  std::set<int64_t> versions;
  {
    Fd root(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (root.get() < 0) written = WriteError(path, "open");
    for (auto it = files.begin(); written.ok() && it != files.end(); ++it) {
      written = WriteFile(root.get(), it->first, it->second);
      versions.insert(std::stoll(it->first.substr(0, it->first.find('/'))));
    }
  }
  if (!written.ok()) {
    RemoveTree(path);
    return written;
  }
  return std::shared_ptr<const ModelFileDirectory>(
      new ModelFileDirectory(std::move(path), std::move(versions)));
}

ModelFileDirectory::~ModelFileDirectory() { RemoveTree(path_); }

}  // namespace inferd
