// Shared memory regions and the control channel between libinferd_python.so
// and one stub process (inferd_python_stub.py).
//
// Region: a memfd mapped here (and, once its fd has been sent, in the stub).
// The first kRegionHeader bytes are a header whose first 32-bit word says
// who may touch the data: 0 = its owner, 1 = lent to the peer. Only the
// owner sets 1 (before sending a message that points into it); only the
// borrower sets 0 (after it copied the data out). Tensor data never goes
// through the channel.
//
// Channel: one end of a SOCK_SEQPACKET socketpair; each datagram is one JSON
// message, with file descriptors of new regions attached (SCM_RIGHTS).
// Send is thread-safe (serialised); Recv by one thread at a time (the
// caller serialises).
// Errors: Create/Map throw inferd_backend::BackendError; Send/Recv return
// false once the peer is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace inferd_python {

constexpr size_t kRegionHeader = 64;
// Control messages above this size travel in a memfd (see Channel::Send).
constexpr size_t kBigMessage = size_t{64} * 1024;

class Region {
 public:
  // A new region of ours with at least `data_size` bytes of data.
  static std::unique_ptr<Region> Create(uint64_t id, size_t data_size);
  // Maps the peer's region `fd` (of `total_size` bytes, header included);
  // takes the fd.
  static std::unique_ptr<Region> Map(uint64_t id, int fd, size_t total_size);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  uint64_t id() const { return id_; }
  int fd() const { return fd_; }
  size_t total_size() const { return size_; }
  size_t capacity() const { return size_ - kRegionHeader; }
  uint8_t* data() const { return base_ + kRegionHeader; }
  bool lent() const { return Flag().load(std::memory_order_acquire) != 0; }
  void SetLent(bool lent) const { Flag().store(lent ? 1 : 0, std::memory_order_release); }
  // Whether the peer has been sent this region's fd yet (owner side).
  bool announced = false;

 private:
  Region(uint64_t id, int fd, uint8_t* base, size_t size)
      : id_(id), fd_(fd), base_(base), size_(size) {}
  std::atomic_ref<uint32_t> Flag() const {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_));
  }
  uint64_t id_;
  int fd_;
  uint8_t* base_;
  size_t size_;
};

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Sends one message with `fds` attached (they stay open here). A message
  // over kBigMessage goes as {"t":"big","size":n} with the body in a memfd
  // (the first fd); Recv undoes that, on both sides of the channel.
  bool Send(const std::string& message, const std::vector<int>& fds = {});
  enum class Received { kMessage, kAgain, kClosed };
  // Receives one message; attached fds are appended to *fds (the caller owns
  // them). kClosed on end of stream or error; kAgain only when
  // `nonblocking` and nothing is there.
  Received Recv(std::string* message, std::vector<int>* fds, bool nonblocking = false);
  int fd() const { return fd_; }
  // Wakes a blocked Recv (it then returns false).
  void Shutdown();

 private:
  int fd_;
  std::mutex send_mu_;
  std::vector<char> buf_ = std::vector<char>(1 << 20);
};

}  // namespace inferd_python
