// DeviceMemory: the core's one view of accelerator memory. Host, pinned host
// and GPU buffers (with a device id), streams for asynchronous copies, and
// opening another process's CUDA IPC handle (CUDA shared memory). The core
// never includes a CUDA header: the implementation is chosen at link time
// (src/cuda/ when the build has CUDA, src/device/no_device_memory.cc
// otherwise), both behind OpenDeviceMemory().
//
// Ownership: a MemoryBuffer owns its bytes and frees them (or closes the IPC
// mapping) when destroyed; it must not outlive the DeviceMemory that made
// it. A CopyStream belongs to one thread at a time.
//
// Threading: DeviceMemory methods are safe from any thread.
//
// Errors: every failure is a Status that names the device and the CUDA
// error; without a GPU, GPU and pinned requests fail UNAVAILABLE with
// Unavailable()'s reason ("no CUDA device: ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace inferd {

const char* MemoryTypeName(MemoryType type);  // "CPU", "CPU_PINNED", "GPU"

class MemoryBuffer {
 public:
  using Release = std::function<void(char*)>;
  MemoryBuffer(char* data, size_t size, MemoryType type, int64_t device_id, Release release)
      : data_(data),
        size_(size),
        type_(type),
        device_id_(device_id),
        release_(std::move(release)) {}
  ~MemoryBuffer() {
    if (release_) release_(data_);
  }
  MemoryBuffer(const MemoryBuffer&) = delete;
  MemoryBuffer& operator=(const MemoryBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  MemoryType memory_type() const { return type_; }
  int64_t device_id() const { return device_id_; }
  BufferView view() const { return BufferView{data_, size_, type_, device_id_}; }

 private:
  char* data_;
  size_t size_;
  MemoryType type_;
  int64_t device_id_;
  Release release_;
};

// An ordered queue of copies on one device (a cudaStream_t with CUDA).
class CopyStream {
 public:
  virtual ~CopyStream() = default;
  // Queues a copy of `size` bytes; either side may be any memory type.
  // Host sides should be pinned for the copy to be truly asynchronous.
  virtual Status CopyAsync(void* dst, MemoryType dst_type, const void* src, MemoryType src_type,
                           size_t size) = 0;
  // Waits until every queued copy has finished; reports the first failure.
  virtual Status Synchronize() = 0;
  virtual int64_t device_id() const = 0;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // GPUs usable by this process (0 without CUDA, a driver or a device).
  virtual int DeviceCount() const = 0;
  // Why DeviceCount() is 0 ("no CUDA device: ..."); "" when it is not.
  virtual std::string Unavailable() const = 0;
  // "cuda" or "none".
  virtual const char* Kind() const = 0;

  // `bytes` of `type` memory (device_id: the GPU, for kGpu; ignored for
  // host types). kCpu always works.
  virtual StatusOr<std::unique_ptr<MemoryBuffer>> Allocate(MemoryType type, int64_t device_id,
                                                           size_t bytes) = 0;
  virtual StatusOr<std::unique_ptr<CopyStream>> NewStream(int64_t device_id) = 0;

  // Maps the device memory that another process exported with
  // cudaIpcGetMemHandle. `handle` is the raw cudaIpcMemHandle_t bytes (64);
  // `byte_size` bytes from its start must lie inside the exporter's
  // allocation (CUDA reports the mapping's size; a larger byte_size is
  // INVALID_ARGUMENT).
  virtual StatusOr<std::unique_ptr<MemoryBuffer>> OpenIpcHandle(const std::string& handle,
                                                                int64_t device_id,
                                                                uint64_t byte_size) = 0;
};

// The build's implementation: CUDA when built with INFERD_WITH_CUDA, else
// one that has no device. Never fails; look at DeviceCount()/Unavailable().
std::shared_ptr<DeviceMemory> OpenDeviceMemory();

// Size of a cudaIpcMemHandle_t (CUDA_IPC_HANDLE_SIZE), as the protocol
// carries it.
constexpr size_t kCudaIpcHandleSize = 64;

}  // namespace inferd
