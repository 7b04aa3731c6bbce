// OpenDeviceMemory() of CUDA builds, on the CUDA runtime (linked statically,
// so the binary needs only the driver's libcuda.so.1 at run time, and starts
// without it). The one file of the server that includes a CUDA header.
//
// No driver or no device: DeviceCount() is 0 and Unavailable() carries
// CUDA's reason; every GPU or pinned request fails UNAVAILABLE with it.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <optional>

#include "core/device_memory.h"

namespace inferd {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == kCudaIpcHandleSize);

Status CudaError(cudaError_t e, const std::string& what) {
  const StatusCode code = e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted
                          : e == cudaErrorInvalidValue   ? StatusCode::kInvalidArgument
                                                         : StatusCode::kInternal;
  return Status(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

cudaMemcpyKind Kind(MemoryType dst, MemoryType src) {
  const bool d = dst == MemoryType::kGpu, s = src == MemoryType::kGpu;
  if (d && s) return cudaMemcpyDeviceToDevice;
  if (d) return cudaMemcpyHostToDevice;
  if (s) return cudaMemcpyDeviceToHost;
  return cudaMemcpyHostToHost;
}

// Bytes from `p` to the end of its allocation; nullopt when the driver
// cannot say.
std::optional<uint64_t> AllocationBytesFrom(void* p) {
  using RangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || fn == nullptr) {
    return std::nullopt;
  }
  CUdeviceptr base = 0;
  size_t size = 0;
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  if (reinterpret_cast<RangeFn>(fn)(&base, &size, ptr) != CUDA_SUCCESS) return std::nullopt;
  return static_cast<uint64_t>(base + size - ptr);
}

class CudaCopyStream : public CopyStream {
 public:
  CudaCopyStream(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~CudaCopyStream() override {
    cudaSetDevice(device_);
    cudaStreamDestroy(stream_);
  }
  Status CopyAsync(void* dst, MemoryType dst_type, const void* src, MemoryType src_type,
                   size_t size) override {
    if (size == 0) return Status::Ok();
    if (auto e = cudaSetDevice(device_); e != cudaSuccess) return CudaError(e, "cudaSetDevice");
    auto e = cudaMemcpyAsync(dst, src, size, Kind(dst_type, src_type), stream_);
    return e == cudaSuccess ? Status::Ok()
                            : CudaError(e, "copy of " + std::to_string(size) + " bytes on GPU " +
                                               std::to_string(device_));
  }
  Status Synchronize() override {
    auto e = cudaStreamSynchronize(stream_);
    return e == cudaSuccess ? Status::Ok()
                            : CudaError(e, "stream of GPU " + std::to_string(device_));
  }
  int64_t device_id() const override { return device_; }

 private:
  int device_;
  cudaStream_t stream_;
};

class CudaDeviceMemory : public DeviceMemory {
 public:
  CudaDeviceMemory() {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver) {
      // Also what the runtime says when there is no driver at all.
      reason_ = "no CUDA device: no NVIDIA driver (libcuda.so.1), or one older than CUDA " +
                std::to_string(CUDART_VERSION / 1000) + "." +
                std::to_string(CUDART_VERSION % 1000 / 10);
      n = 0;
    } else if (e != cudaSuccess) {
      reason_ = std::string("no CUDA device: ") + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")";
      cudaGetLastError();  // clear the (non-sticky) error so later calls start clean
      n = 0;
    } else if (n == 0) {
      reason_ = "no CUDA device: the CUDA driver reports none";
    }
    count_ = n;
  }

  int DeviceCount() const override { return count_; }
  std::string Unavailable() const override { return reason_; }
  const char* Kind() const override { return "cuda"; }

  StatusOr<std::unique_ptr<MemoryBuffer>> Allocate(MemoryType type, int64_t device_id,
                                                   size_t bytes) override {
    if (type == MemoryType::kCpu) {
      char* p = bytes ? new (std::nothrow) char[bytes] : nullptr;
      if (bytes && p == nullptr) {
        return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes");
      }
      return std::make_unique<MemoryBuffer>(p, bytes, type, 0, [](char* q) { delete[] q; });
    }
    INFERD_RETURN_IF_ERROR(CheckDevice(type == MemoryType::kGpu ? device_id : 0));
    void* p = nullptr;
    if (type == MemoryType::kCpuPinned) {
      if (auto e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable); e != cudaSuccess) {
        return CudaError(e, "cudaHostAlloc of " + std::to_string(bytes) + " bytes");
      }
      return std::make_unique<MemoryBuffer>(static_cast<char*>(p), bytes, type, 0,
                                            [](char* q) { cudaFreeHost(q); });
    }
    const int dev = static_cast<int>(device_id);
    if (auto e = cudaMalloc(&p, bytes ? bytes : 1); e != cudaSuccess) {
      return CudaError(
          e, "cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " + std::to_string(dev));
    }
    return std::make_unique<MemoryBuffer>(static_cast<char*>(p), bytes, type, device_id,
                                          [dev](char* q) {
                                            cudaSetDevice(dev);
                                            cudaFree(q);
                                          });
  }

  StatusOr<std::unique_ptr<CopyStream>> NewStream(int64_t device_id) override {
    INFERD_RETURN_IF_ERROR(CheckDevice(device_id));
    cudaStream_t s = nullptr;
    if (auto e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess) {
      return CudaError(e, "cudaStreamCreate on GPU " + std::to_string(device_id));
    }
    return std::unique_ptr<CopyStream>(
        std::make_unique<CudaCopyStream>(static_cast<int>(device_id), s));
  }

  StatusOr<std::unique_ptr<MemoryBuffer>> OpenIpcHandle(const std::string& handle,
                                                        int64_t device_id,
                                                        uint64_t byte_size) override {
    if (handle.size() != kCudaIpcHandleSize) {
      return InvalidArgument("a CUDA IPC handle has " + std::to_string(kCudaIpcHandleSize) +
                             " bytes, got " + std::to_string(handle.size()));
    }
    INFERD_RETURN_IF_ERROR(CheckDevice(device_id));
    cudaIpcMemHandle_t h;
    std::memcpy(&h, handle.data(), sizeof(h));
    void* p = nullptr;
    if (auto e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess) {
      cudaGetLastError();
      return InvalidArgument("cannot open the CUDA IPC handle on GPU " + std::to_string(device_id) +
                             ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    }
    auto close = [dev = static_cast<int>(device_id)](char* q) {
      cudaSetDevice(dev);
      cudaIpcCloseMemHandle(q);
    };
    // The exporter's allocation must hold byte_size bytes: ask the driver
    // for the mapping's range (through the runtime's entry-point query, so
    // that the binary does not link libcuda).
    if (auto range = AllocationBytesFrom(p); range && *range < byte_size) {
      close(static_cast<char*>(p));
      return InvalidArgument("the CUDA IPC allocation has " + std::to_string(*range) +
                             " bytes from the handle's address, fewer than byte_size " +
                             std::to_string(byte_size));
    }
    return std::make_unique<MemoryBuffer>(static_cast<char*>(p), byte_size, MemoryType::kGpu,
                                          device_id, close);
  }

 private:
  Status CheckDevice(int64_t device_id) const {
    if (count_ == 0) return inferd::Unavailable(reason_);
    if (device_id < 0 || device_id >= count_) {
      return InvalidArgument("GPU " + std::to_string(device_id) +
                             " does not exist (this machine has " + std::to_string(count_) + ")");
    }
    if (auto e = cudaSetDevice(static_cast<int>(device_id)); e != cudaSuccess) {
      return CudaError(e, "cudaSetDevice(" + std::to_string(device_id) + ")");
    }
    return Status::Ok();
  }

  int count_ = 0;
  std::string reason_;
};

}  // namespace

std::shared_ptr<DeviceMemory> OpenDeviceMemory() { return std::make_shared<CudaDeviceMemory>(); }

}  // namespace inferd
