#include "middleman/shm_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <iostream>

namespace inferd::middleman {

namespace {
using Async = InferdStub::async_interface;
constexpr auto kRetryInterval = std::chrono::seconds(1);
std::atomic<int> object_counter{0};
}  // namespace

StatusOr<std::unique_ptr<ShmPool>> ShmPool::Create(ShmPoolOptions options, InferdPool& inferd,
                                                   MetricsRegistry* metrics) {
  if (options.slots < 1 || options.slot_bytes < 64) {
    return InvalidArgument("shared-memory pool needs at least one slot of at least 64 bytes");
  }
  std::unique_ptr<ShmPool> pool(new ShmPool(options, inferd, metrics));
  pool->key_ = "/inferd-mm-" + std::to_string(getpid()) + "-" + std::to_string(object_counter++);
  pool->size_ = options.slot_bytes * static_cast<size_t>(options.slots);
  int fd = shm_open(pool->key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left by an earlier process with this pid that did not exit cleanly: a
    // restarted container's pid 1, whose /dev/shm outlives it (a pod's
    // emptyDir). No live process can hold the name (pids are unique in the
    // namespace that shares this /dev/shm), so it is removed and made anew.
    std::cerr << "middleman: removing stale shared memory " << pool->key_
              << " (left by an earlier process)\n";
    shm_unlink(pool->key_.c_str());
    fd = shm_open(pool->key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0) {
    return Internal("cannot create shared memory " + pool->key_ + ": " + std::strerror(errno));
  }
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(pool->size_)) == 0) {
    p = mmap(nullptr, pool->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(pool->key_.c_str());
    pool->key_.clear();
    return Internal("cannot size or map shared memory: " + std::string(std::strerror(err)));
  }
  pool->base_ = static_cast<uint8_t*>(p);
  for (int i = 0; i < options.slots; ++i) {
    pool->regions_.push_back(pool->key_.substr(1) + "-" + std::to_string(i));
    pool->free_.push_back(options.slots - 1 - i);
  }
  return pool;
}

ShmPool::ShmPool(ShmPoolOptions options, InferdPool& inferd, MetricsRegistry* metrics)
    : options_(options), inferd_(inferd), metrics_(metrics) {}

ShmPool::~ShmPool() {
  std::unique_lock<std::mutex> lock(mu_);
  registered_.wait(lock, [&] { return state_ != State::kRegistering; });
  const bool ready = state_ == State::kReady;
  lock.unlock();
  if (ready) {
    for (const auto& name : regions_) {
      ::grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
      inference::SystemSharedMemoryUnregisterRequest request;
      inference::SystemSharedMemoryUnregisterResponse response;
      request.set_name(name);
      if (!inferd_.NextStub().SystemSharedMemoryUnregister(&context, request, &response).ok()) {
        break;  // inferd is gone; it forgets the regions itself
      }
    }
  }
  if (base_ != nullptr) munmap(base_, size_);
  if (!key_.empty()) shm_unlink(key_.c_str());
}

std::unique_ptr<ShmPool::Lease> ShmPool::Acquire(size_t bytes) {
  bool start_registering = false;
  std::unique_ptr<Lease> lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kUnregistered && std::chrono::steady_clock::now() >= next_attempt_) {
      state_ = State::kRegistering;
      start_registering = true;
    } else if (state_ == State::kReady && bytes <= options_.slot_bytes && !free_.empty()) {
      lease = std::make_unique<Lease>(this, free_.back());
      free_.pop_back();
    }
  }
  // Outside the lock: a gRPC callback may run before Call returns.
  if (start_registering) RegisterAsync();
  return lease;
}

void ShmPool::Register() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != State::kUnregistered) return;
    state_ = State::kRegistering;
  }
  RegisterAsync();
}

void ShmPool::Release(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(slot);
}

void ShmPool::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kReady) state_ = State::kUnregistered;
}

// Registers region 0, 1, ... one after another, each after unregistering a
// stale registration of the same name (inferd may still hold some after
// Invalidate). Runs on gRPC's threads; the lock is not held across calls.
void ShmPool::RegisterAsync() {
  auto step = std::make_shared<std::function<void(size_t)>>();
  std::weak_ptr<std::function<void(size_t)>> weak = step;
  *step = [this, weak](size_t i) {
    auto self = weak.lock();
    if (i == regions_.size()) {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = State::kReady;
      registered_.notify_all();
      return;
    }
    inference::SystemSharedMemoryUnregisterRequest unregister;
    unregister.set_name(regions_[i]);
    inferd_.Call<inference::SystemSharedMemoryUnregisterRequest,
                 inference::SystemSharedMemoryUnregisterResponse>(
        &Async::SystemSharedMemoryUnregister, std::move(unregister), {},
        [this, i, self](const ::grpc::Status&, inference::SystemSharedMemoryUnregisterResponse&) {
          inference::SystemSharedMemoryRegisterRequest r;
          r.set_name(regions_[i]);
          r.set_key(key_);
          r.set_offset(options_.slot_bytes * i);
          r.set_byte_size(options_.slot_bytes);
          inferd_.Call<inference::SystemSharedMemoryRegisterRequest,
                       inference::SystemSharedMemoryRegisterResponse>(
              &Async::SystemSharedMemoryRegister, std::move(r), {},
              [this, i, self](const ::grpc::Status& s,
                              inference::SystemSharedMemoryRegisterResponse&) {
                if (s.ok()) return (*self)(i + 1);
                std::cerr << "middleman: registering shared memory with inferd failed ("
                          << s.error_message() << "); inputs go inline meanwhile" << std::endl;
                if (metrics_ != nullptr) {
                  metrics_
                      ->counter("middleman_shm_register_failures_total",
                                "Failed attempts to register the shared-memory slots with inferd")
                      .Add();
                }
                std::lock_guard<std::mutex> lock(mu_);
                state_ = State::kUnregistered;
                next_attempt_ = std::chrono::steady_clock::now() + kRetryInterval;
                registered_.notify_all();
              });
        });
  };
  // The chain keeps `step` alive through the callbacks' copies of `self`.
  (*step)(0);
}

}  // namespace inferd::middleman
