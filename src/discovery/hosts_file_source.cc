#include "discovery/hosts_file_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "discovery/host_list.h"

namespace inferd::discovery {
namespace {

constexpr off_t kMaxFileBytes = off_t{16} << 20;

// The file's content, or an error message naming the path.
StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Unavailable("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Unavailable(path + " is not a regular file");
  }
  if (st.st_size > kMaxFileBytes) {
    ::close(fd);
    return Unavailable(path + " is larger than 16 MiB");
  }
  std::string content;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return Unavailable("cannot read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
    if (content.size() > static_cast<size_t>(kMaxFileBytes)) {
      ::close(fd);
      return Unavailable(path + " is larger than 16 MiB");
    }
  }
  ::close(fd);
  return content;
}

}  // namespace

std::optional<HostSet> HostsFileSource::Poll() {
  StatusOr<std::string> content = ReadSmallFile(path_);
  if (!content.ok()) {
    health().Fail(content.status().message());
    return std::nullopt;
  }
  StatusOr<HostSet> set = ParseHostsFileContent(*content);
  if (!set.ok()) {
    health().Fail(path_ + ": " + set.status().message());
    return std::nullopt;
  }
  health().Recovered();
  return *std::move(set);
}

}  // namespace inferd::discovery
