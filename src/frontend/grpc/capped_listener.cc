#include "frontend/grpc/capped_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace inferd::grpc_frontend {
namespace {

// A listening socket on the first address `address` resolves to; -1 and
// `error` set when none can be bound.
int ListenOn(const std::string& address, int port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string host = address;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(),
                               &hints, &found);
  if (rc != 0) {
    error = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC's own ports
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

StatusOr<std::unique_ptr<CappedListener>> CappedListener::Bind(const std::string& address, int port,
                                                               int max_connections) {
  std::string error;
  const int fd = ListenOn(address, port, error);
  if (fd < 0) {
    return Unavailable("gRPC: failed to listen on " + address + ":" + std::to_string(port) + " (" +
                       error + ")");
  }
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    ::close(fd);
    return Internal(std::string("gRPC: eventfd: ") + std::strerror(errno));
  }
  return std::unique_ptr<CappedListener>(
      new CappedListener(fd, wake, BoundPort(fd), max_connections));
}

CappedListener::CappedListener(int listen_fd, int wake_fd, int port, int max_connections)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), max_connections_(max_connections) {}

CappedListener::~CappedListener() { Stop(); }

void CappedListener::Start(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  acceptor_ = acceptor;
  thread_ = std::thread([this] { Loop(); });
}

void CappedListener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0) {
    INFERD_LOG(Error) << "gRPC: cannot wake the accept thread: " << std::strerror(errno);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : watched_) ::close(fd);
  watched_.clear();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void CappedListener::Loop() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    for (int fd : watched_) fds.push_back({fd, POLLRDHUP, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      INFERD_LOG(Error) << "gRPC: poll on the listening socket failed: " << std::strerror(errno);
      return;
    }
    if (fds[0].revents != 0) return;  // Stop
    // Ends first, so that a connection that just closed frees its place.
    std::vector<int> still_open;
    for (size_t i = 2; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) {
        ::close(fds[i].fd);
        --open_;
      } else {
        still_open.push_back(fds[i].fd);
      }
    }
    watched_.swap(still_open);
    if (fds[1].revents != 0) AcceptPending(acceptor_);
  }
}

void CappedListener::AcceptPending(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EAGAIN: nothing more; EMFILE and the like: the connection waits in
      // the backlog until a descriptor is free.
      return;
    }
    if (open_.load() >= max_connections_) {
      INFERD_VLOG(1) << "gRPC: connection closed at accept: " << max_connections_
                     << " open (--grpc-max-connections)";
      ::close(fd);
      continue;
    }
    const int watch = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (watch < 0) {
      ::close(fd);  // cannot count it: not taken
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    watched_.push_back(watch);
    ++open_;
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters params;
    params.listener_fd = listen_fd_;
    params.fd = fd;  // gRPC's from here on
    acceptor->HandleNewConnection(&params);
  }
}

}  // namespace inferd::grpc_frontend
