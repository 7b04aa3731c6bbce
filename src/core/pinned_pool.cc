#include "core/pinned_pool.h"

#include <bit>

namespace inferd {

const char* MemoryTypeName(MemoryType type) {
  switch (type) {
    case MemoryType::kCpu:
      return "CPU";
    case MemoryType::kCpuPinned:
      return "CPU_PINNED";
    case MemoryType::kGpu:
      return "GPU";
  }
  return "UNKNOWN";
}

StagingBuffer::~StagingBuffer() {
  if (buffer_ && buffer_->memory_type() == MemoryType::kCpuPinned) {
    pool_->Return(std::move(buffer_));
  }
}

size_t PinnedStagingPool::SizeClass(size_t bytes) {
  // At least 64 KiB: small copies share a few buffers.
  return std::bit_ceil(std::max<size_t>(bytes, size_t{64} << 10));
}

StatusOr<std::unique_ptr<StagingBuffer>> PinnedStagingPool::Acquire(size_t bytes) {
  const size_t cls = SizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      auto b = std::move(it->second.back());
      it->second.pop_back();
      cached_ -= cls;
      return std::make_unique<StagingBuffer>(this, std::move(b), bytes);
    }
  }
  auto pinned = device_->Allocate(MemoryType::kCpuPinned, 0, cls);
  if (pinned.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++pinned_made_;
    return std::make_unique<StagingBuffer>(this, std::move(*pinned), bytes);
  }
  auto host = device_->Allocate(MemoryType::kCpu, 0, bytes);
  if (!host.ok()) return host.status();
  return std::make_unique<StagingBuffer>(this, std::move(*host), bytes);
}

void PinnedStagingPool::Return(std::unique_ptr<MemoryBuffer> buffer) {
  const size_t cls = buffer->size();
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ + cls > max_cached_) return;  // freed here, outside the cache
  cached_ += cls;
  free_[cls].push_back(std::move(buffer));
}

size_t PinnedStagingPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

size_t PinnedStagingPool::pinned_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pinned_made_;
}

}  // namespace inferd
