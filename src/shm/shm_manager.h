// SharedMemoryManager: client-registered system shared-memory regions
// (Triton's system_shared_memory extension). A region maps
// [offset, offset + byte_size) of a POSIX shared-memory object.
//
// Ownership: regions are held by shared_ptr. A request that uses a region
// keeps it mapped until it completes, so unregistering a region in use is
// safe (the mapping goes away when the last request lets go).
//
// Threading: all methods are safe from any thread (one mutex, held briefly).
// Errors never echo the internal object key back except in Status(), which
// only reports what the client registered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/infer_request.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/thread_annotations.h"

namespace inferd {

class CudaSharedMemoryManager;
class CudaSharedMemoryRegion;

class SharedMemoryRegion {
 public:
  ~SharedMemoryRegion();
  const std::string& name() const { return name_; }
  const std::string& key() const { return key_; }
  uint64_t offset() const { return offset_; }
  uint64_t byte_size() const { return byte_size_; }
  // The region's bytes (read/write), `byte_size()` long.
  char* data() const { return base_ + (offset_ - map_offset_); }

  // [offset, offset + size) of the region, checked with overflow-safe
  // arithmetic; errors name the region, never the key.
  StatusOr<char*> Slice(uint64_t offset, uint64_t size) const;

 private:
  friend class SharedMemoryManager;
  std::string name_, key_;
  uint64_t offset_ = 0, byte_size_ = 0;
  char* base_ = nullptr;  // mapping start (page-aligned)
  size_t map_length_ = 0;
  uint64_t map_offset_ = 0;  // file offset of the mapping (page-aligned)
};

// A tensor placed in a registered region: [offset, offset + byte_size),
// already bounds-checked. Holding it keeps the mapping alive. Exactly one of
// `region` (system; `data` points at the bytes) and `cuda_region` (device
// memory; `data` is null) is set.
struct SharedMemorySlice {
  std::shared_ptr<SharedMemoryRegion> region;
  std::shared_ptr<CudaSharedMemoryRegion> cuda_region;
  uint64_t offset = 0, byte_size = 0;
  char* data = nullptr;
};

// An output the client asked to receive in a region (HTTP and gRPC).
using SharedMemoryOutput = SharedMemorySlice;

class SharedMemoryManager;

// Resolves a request's (region, offset, byte_size) reference: a system
// region, else a CUDA region of the same name (one namespace). `shm` nullptr
// means shared memory is not available on this path. INVALID_ARGUMENT naming
// `where` (e.g. "input 'x'") for an unknown region or an out-of-range slice.
StatusOr<SharedMemorySlice> ResolveSharedMemory(const SharedMemoryManager* shm,
                                                const std::string& where, const std::string& region,
                                                uint64_t offset, uint64_t byte_size);

// The host bytes of an input slice for `req`: the mapping itself for a
// system region (held by `req`), a request-owned host copy for a CUDA
// region (device -> host through pinned staging: backends read host memory).
StatusOr<BufferView> SharedMemoryInputView(const SharedMemorySlice& slice, const std::string& where,
                                           InferRequest& req);

// Copies an output's bytes into its slice (host -> device for a CUDA
// region); INVALID_ARGUMENT if the slice is smaller than the output.
Status WriteSharedMemoryOutput(const SharedMemoryOutput& dst, const std::string& output_name,
                               const char* data, size_t size);

struct RegionStatus {
  std::string name, key;
  uint64_t offset = 0, byte_size = 0;
};

class SharedMemoryManager {
 public:
  // Maps the object `key` (a POSIX name like "/my_region"). Errors: a bad
  // key, a missing object, a range past the object's size, a duplicate name.
  Status Register(const std::string& name, const std::string& key, uint64_t offset,
                  uint64_t byte_size) INFERD_EXCLUDES(mu_);
  // Unregisters one region, or all when `name` is empty. A name that is
  // not a registered system region is nothing to do: OK, as Triton answers.
  Status Unregister(const std::string& name) INFERD_EXCLUDES(mu_);
  // Status of one region (unknown: NOT_FOUND) or all (empty name).
  StatusOr<std::vector<RegionStatus>> GetStatus(const std::string& name) const INFERD_EXCLUDES(mu_);
  // The region for an inference; NOT_FOUND naming it if unknown.
  StatusOr<std::shared_ptr<SharedMemoryRegion>> Find(const std::string& name) const
      INFERD_EXCLUDES(mu_);

  // The CUDA regions, which share the namespace of region names and are
  // found through this manager by the codecs (null: none). Set once, before
  // serving; the CUDA manager outlives this one.
  void set_cuda(const CudaSharedMemoryManager* cuda) { cuda_ = cuda; }
  const CudaSharedMemoryManager* cuda() const { return cuda_; }

  // True if `key` is an acceptable POSIX shared-memory object name.
  static bool IsValidKey(const std::string& key);

 private:
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<SharedMemoryRegion>> regions_ INFERD_GUARDED_BY(mu_);
  const CudaSharedMemoryManager* cuda_ = nullptr;
};

}  // namespace inferd
