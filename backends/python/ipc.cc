// See ipc.h.
#include "python/ipc.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/backend_util.h"

namespace inferd_python {

using inferd_backend::Fail;

std::unique_ptr<Region> Region::Create(uint64_t id, size_t data_size) {
  size_t size = size_t{64} * 1024;
  while (size < data_size + kRegionHeader) size <<= 1;
  const int fd = memfd_create("inferd-python", MFD_CLOEXEC);
  if (fd < 0)
    Fail(INFERD_ERROR_RESOURCE_EXHAUSTED, std::string("memfd_create: ") + strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    close(fd);
    Fail(INFERD_ERROR_RESOURCE_EXHAUSTED,
         std::string("ftruncate of shared memory: ") + strerror(e));
  }
  return Map(id, fd, size);
}

std::unique_ptr<Region> Region::Map(uint64_t id, int fd, size_t total_size) {
  if (total_size < kRegionHeader) {
    close(fd);
    Fail(INFERD_ERROR_INTERNAL, "stub sent a shared memory region smaller than its header");
  }
  void* p = mmap(nullptr, total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    Fail(INFERD_ERROR_RESOURCE_EXHAUSTED, std::string("mmap of shared memory: ") + strerror(e));
  }
  return std::unique_ptr<Region>(new Region(id, fd, static_cast<uint8_t*>(p), total_size));
}

Region::~Region() {
  munmap(base_, size_);
  close(fd_);
}

Channel::~Channel() { close(fd_); }

bool Channel::Send(const std::string& body, const std::vector<int>& body_fds) {
  // A datagram must fit the socket's buffer (~200 KiB by default): a larger
  // message travels in a memfd, sent first among the fds.
  std::string message;
  std::vector<int> fds;
  int big = -1;
  if (body.size() > kBigMessage) {
    big = memfd_create("inferd-python-message", MFD_CLOEXEC);
    if (big < 0) return false;
    size_t done = 0;
    while (done < body.size()) {
      const ssize_t n = write(big, body.data() + done, body.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(big);
        return false;
      }
      done += static_cast<size_t>(n);
    }
    message = "{\"t\":\"big\",\"size\":" + std::to_string(body.size()) + "}";
    fds.push_back(big);
  }
  fds.insert(fds.end(), body_fds.begin(), body_fds.end());
  struct CloseBig {
    int fd;
    ~CloseBig() {
      if (fd >= 0) close(fd);
    }
  } close_big{big};
  const std::string& data = big >= 0 ? message : body;
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  std::lock_guard<std::mutex> lock(send_mu_);
  for (;;) {
    const ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n >= 0) return true;
    if (errno != EINTR) return false;
  }
}

Channel::Received Channel::Recv(std::string* message, std::vector<int>* fds, bool nonblocking) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 64)];
  iovec iov{buf_.data(), buf_.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC | (nonblocking ? MSG_DONTWAIT : 0));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Received::kAgain;
  if (n <= 0) return Received::kClosed;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->push_back(fd);
      }
    }
  }
  if (msg.msg_flags & MSG_TRUNC) return Received::kClosed;  // over 1 MiB: protocol error
  message->assign(buf_.data(), static_cast<size_t>(n));
  static const std::string kBig = "{\"t\":\"big\",\"size\":";
  if (message->compare(0, kBig.size(), kBig) == 0 && !fds->empty()) {
    const size_t size = std::strtoull(message->c_str() + kBig.size(), nullptr, 10);
    const int fd = fds->front();
    fds->erase(fds->begin());
    message->resize(size);
    size_t done = 0;
    while (done < size) {
      const ssize_t r = pread(fd, message->data() + done, size - done, static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    close(fd);
    if (done < size) return Received::kClosed;
  }
  return Received::kMessage;
}

void Channel::Shutdown() { shutdown(fd_, SHUT_RDWR); }

}  // namespace inferd_python
