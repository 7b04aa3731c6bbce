// CappedListener: the gRPC port's listening socket when --grpc-max-connections
// is set. gRPC 1.51 has no limit on connections and no hook at accept, so
// inferd accepts TCP connections itself and hands each one to the gRPC server
// through an ExternalConnectionAcceptor (which runs the server's credentials'
// handshake on it, so TLS and mutual TLS work as on a port gRPC binds). A
// connection that would exceed the limit is closed at once, before any
// handshake: the client's call fails UNAVAILABLE.
//
// Counting: for each connection handed over, the listener keeps a duplicate
// descriptor and polls it. The connection stops counting when the peer closes
// it (POLLRDHUP) or gRPC does: gRPC shuts a socket down (shutdown(SHUT_RDWR))
// before closing it, which the duplicate sees as POLLHUP. The duplicate is
// closed then, so the socket is released with gRPC's close.
//
// Threading: one thread of its own (accept and watch, in poll(2)), from
// Start to Stop. Bind, Start and Stop are called from one thread (GrpcServer's
// owner); open_connections from any thread.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace inferd::grpc_frontend {

class CappedListener {
 public:
  // Binds and listens on address:port (port 0: the kernel picks; never
  // shared with another process). UNAVAILABLE naming the address when it
  // cannot be bound. `max_connections` > 0.
  static StatusOr<std::unique_ptr<CappedListener>> Bind(const std::string& address, int port,
                                                        int max_connections);
  // Stops if still running.
  ~CappedListener();
  CappedListener(const CappedListener&) = delete;
  CappedListener& operator=(const CappedListener&) = delete;

  // The bound port.
  int port() const { return port_; }

  // Starts accepting; connections go to `acceptor`, which must stay valid
  // until Stop returns (the gRPC server that owns it is shut down after).
  void Start(grpc::experimental::ExternalConnectionAcceptor* acceptor);

  // Stops accepting (new connections are refused by the kernel), joins the
  // thread and releases the listener's descriptors; connections already
  // handed over stay gRPC's. Idempotent.
  void Stop();

  // Connections counted now.
  int open_connections() const { return open_.load(); }

 private:
  CappedListener(int listen_fd, int wake_fd, int port, int max_connections);
  void Loop();
  // Accepts every pending connection: hands it over, or closes it when full.
  void AcceptPending(grpc::experimental::ExternalConnectionAcceptor* acceptor);

  const int listen_fd_;
  const int wake_fd_;  // eventfd: Stop wakes the loop
  const int port_;
  const int max_connections_;
  grpc::experimental::ExternalConnectionAcceptor* acceptor_ = nullptr;
  std::vector<int> watched_;  // duplicates of the open connections; the loop's thread only
  std::atomic<int> open_{0};
  std::thread thread_;
  bool stopped_ = false;
};

}  // namespace inferd::grpc_frontend
