// OpenDeviceMemory() of builds without CUDA: host memory only. Pinned
// requests fail (the staging pool then uses plain host memory), GPU requests
// and CUDA IPC handles fail UNAVAILABLE with a reason that says why.
#include <cstring>

#include "core/device_memory.h"

namespace inferd {
namespace {

constexpr const char* kReason = "no CUDA device: this inferd was built without CUDA";

class HostCopyStream : public CopyStream {
 public:
  Status CopyAsync(void* dst, MemoryType dst_type, const void* src, MemoryType src_type,
                   size_t size) override {
    if (dst_type == MemoryType::kGpu || src_type == MemoryType::kGpu) return Unavailable(kReason);
    if (size) std::memcpy(dst, src, size);
    return Status::Ok();
  }
  Status Synchronize() override { return Status::Ok(); }
  int64_t device_id() const override { return 0; }
};

class NoDeviceMemory : public DeviceMemory {
 public:
  int DeviceCount() const override { return 0; }
  std::string Unavailable() const override { return kReason; }
  const char* Kind() const override { return "none"; }

  StatusOr<std::unique_ptr<MemoryBuffer>> Allocate(MemoryType type, int64_t,
                                                   size_t bytes) override {
    if (type != MemoryType::kCpu) {
      return inferd::Unavailable(std::string("cannot allocate ") + MemoryTypeName(type) +
                                 " memory: " + kReason);
    }
    char* p = bytes ? new (std::nothrow) char[bytes] : nullptr;
    if (bytes && p == nullptr) {
      return ResourceExhausted("cannot allocate " + std::to_string(bytes) + " bytes");
    }
    return std::make_unique<MemoryBuffer>(p, bytes, MemoryType::kCpu, 0,
                                          [](char* q) { delete[] q; });
  }

  StatusOr<std::unique_ptr<CopyStream>> NewStream(int64_t device_id) override {
    if (device_id != 0) return inferd::Unavailable(kReason);
    return std::unique_ptr<CopyStream>(std::make_unique<HostCopyStream>());
  }

  StatusOr<std::unique_ptr<MemoryBuffer>> OpenIpcHandle(const std::string&, int64_t,
                                                        uint64_t) override {
    return inferd::Unavailable(std::string("cannot open a CUDA IPC handle: ") + kReason);
  }
};

}  // namespace

std::shared_ptr<DeviceMemory> OpenDeviceMemory() { return std::make_shared<NoDeviceMemory>(); }

}  // namespace inferd
