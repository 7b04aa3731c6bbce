// CudaSharedMemoryManager: client-registered CUDA shared-memory regions
// (the cuda_shared_memory extension, PROTOCOL.md §1.11). A client exports
// device memory with cudaIpcGetMemHandle and registers the raw handle bytes,
// the GPU and a byte size; the server maps it once (DeviceMemory::
// OpenIpcHandle) and reads inputs from / writes outputs to it with copies on
// a stream of that GPU, staged through pinned host buffers.
//
// Ownership: regions are held by shared_ptr; a request using a region keeps
// it mapped until it completes, so unregistering a region in use is safe.
// Regions use their manager's staging pool: the manager must outlive every
// request that holds one (InferenceServer drains requests before it goes).
//
// Threading: all methods are safe from any thread. Copies of one region are
// serialised on its own stream (one mutex per region).
//
// Errors: without a GPU, Register is UNAVAILABLE and says "no CUDA device";
// a bad handle, device or size is INVALID_ARGUMENT naming the region.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/device_memory.h"
#include "core/pinned_pool.h"
#include "core/status.h"
#include "core/thread_annotations.h"

namespace inferd {

class CudaSharedMemoryRegion {
 public:
  const std::string& name() const { return name_; }
  int64_t device_id() const { return device_id_; }
  uint64_t byte_size() const { return byte_size_; }

  // Overflow-safe bounds check of [offset, offset + size); the error names
  // the region.
  Status CheckRange(uint64_t offset, uint64_t size) const;
  // Device -> host: `size` bytes at `offset` into `dst` (host memory).
  Status CopyToHost(uint64_t offset, uint64_t size, char* dst) const INFERD_EXCLUDES(copy_mu_);
  // Host -> device: `size` bytes from `src` to `offset`.
  Status CopyFromHost(uint64_t offset, const char* src, uint64_t size) const
      INFERD_EXCLUDES(copy_mu_);

 private:
  friend class CudaSharedMemoryManager;
  std::string name_;
  int64_t device_id_ = 0;
  uint64_t byte_size_ = 0;
  std::unique_ptr<MemoryBuffer> mapping_;  // the opened IPC handle
  // Set once at registration; the stream is used under copy_mu_.
  std::unique_ptr<CopyStream> stream_ INFERD_PT_GUARDED_BY(copy_mu_);
  PinnedStagingPool* staging_ = nullptr;
  mutable Mutex copy_mu_;
};

struct CudaRegionStatus {
  std::string name;
  int64_t device_id = 0;
  uint64_t byte_size = 0;
};

class CudaSharedMemoryManager {
 public:
  // `device` may be a DeviceMemory without GPUs: then every Register fails.
  explicit CudaSharedMemoryManager(std::shared_ptr<DeviceMemory> device);

  // `raw_handle`: the cudaIpcMemHandle_t bytes (exactly 64). Errors: an
  // empty name, a duplicate name, a handle of the wrong size, a GPU that
  // does not exist, a handle CUDA cannot open, byte_size 0 or larger than
  // the exported allocation, and no GPU at all.
  Status Register(const std::string& name, const std::string& raw_handle, int64_t device_id,
                  uint64_t byte_size) INFERD_EXCLUDES(mu_);
  // One region or all (empty name); an unknown name is nothing to do (OK),
  // as Triton answers.
  Status Unregister(const std::string& name) INFERD_EXCLUDES(mu_);
  StatusOr<std::vector<CudaRegionStatus>> GetStatus(const std::string& name) const
      INFERD_EXCLUDES(mu_);
  StatusOr<std::shared_ptr<CudaSharedMemoryRegion>> Find(const std::string& name) const
      INFERD_EXCLUDES(mu_);

  int DeviceCount() const { return device_->DeviceCount(); }

 private:
  std::shared_ptr<DeviceMemory> device_;
  PinnedStagingPool staging_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<CudaSharedMemoryRegion>> regions_ INFERD_GUARDED_BY(mu_);
};

}  // namespace inferd
