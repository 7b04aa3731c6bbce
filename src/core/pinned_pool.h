// PinnedStagingPool: reusable pinned host buffers for copies between host
// and GPU. Page-locking memory costs far more than a copy, so buffers are
// kept after use, by power-of-two size class, up to `max_cached_bytes`.
// When pinned memory cannot be had (no CUDA device, the pinned limit
// reached) the pool hands out ordinary host memory instead: copies still
// work, only slower, and the caller sees memory_type() kCpu.
//
// Ownership: a StagingBuffer returns its memory to the pool when destroyed;
// the pool must outlive its buffers (the server owns both).
//
// Threading: Acquire and the buffers' destructors are safe from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/device_memory.h"

namespace inferd {

class PinnedStagingPool;

class StagingBuffer {
 public:
  StagingBuffer(PinnedStagingPool* pool, std::unique_ptr<MemoryBuffer> buffer, size_t size)
      : pool_(pool), buffer_(std::move(buffer)), size_(size) {}
  ~StagingBuffer();
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  char* data() const { return buffer_->data(); }
  size_t size() const { return size_; }  // what was asked for (capacity may be larger)
  MemoryType memory_type() const { return buffer_->memory_type(); }

 private:
  PinnedStagingPool* pool_;
  std::unique_ptr<MemoryBuffer> buffer_;
  size_t size_;
};

class PinnedStagingPool {
 public:
  PinnedStagingPool(std::shared_ptr<DeviceMemory> device, size_t max_cached_bytes)
      : device_(std::move(device)), max_cached_(max_cached_bytes) {}

  // A buffer of at least `bytes` (pinned if possible). Fails only when not
  // even host memory can be allocated.
  StatusOr<std::unique_ptr<StagingBuffer>> Acquire(size_t bytes);

  size_t cached_bytes() const;
  size_t pinned_allocations() const;  // pinned buffers made, over the pool's life

 private:
  friend class StagingBuffer;
  void Return(std::unique_ptr<MemoryBuffer> buffer);
  static size_t SizeClass(size_t bytes);

  std::shared_ptr<DeviceMemory> device_;
  const size_t max_cached_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<std::unique_ptr<MemoryBuffer>>> free_;  // guarded by mu_
  size_t cached_ = 0;                                                  // guarded by mu_
  size_t pinned_made_ = 0;                                             // guarded by mu_
};

}  // namespace inferd
