// FakeDevice: a DeviceMemory whose "GPU" and pinned memory are host memory,
// so that code above the device layer (staging pool, CUDA shared memory,
// codecs) runs for real on machines without a GPU. Test-only.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "core/device_memory.h"

namespace inferd::testing_fakes {

// A device whose GPU and pinned memory are host memory; counts allocations.
class FakeDevice : public DeviceMemory {
 public:
  int devices = 1;
  bool pinned_works = true;
  int pinned_allocations = 0;
  uint64_t ipc_allocation_bytes = 4096;  // what the "exporter" allocated

  int DeviceCount() const override { return devices; }
  std::string Unavailable() const override { return devices ? "" : "no CUDA device: fake"; }
  const char* Kind() const override { return "fake"; }
  StatusOr<std::unique_ptr<MemoryBuffer>> Allocate(MemoryType type, int64_t device,
                                                   size_t bytes) override {
    if (type == MemoryType::kCpuPinned) {
      if (!pinned_works) return inferd::Unavailable("no pinned memory");
      ++pinned_allocations;
    }
    return std::make_unique<MemoryBuffer>(new char[bytes ? bytes : 1], bytes, type, device,
                                          [](char* p) { delete[] p; });
  }
  StatusOr<std::unique_ptr<CopyStream>> NewStream(int64_t device) override {
    struct Stream : CopyStream {
      int64_t dev;
      Status CopyAsync(void* d, MemoryType, const void* s, MemoryType, size_t n) override {
        std::memcpy(d, s, n);
        return Status::Ok();
      }
      Status Synchronize() override { return Status::Ok(); }
      int64_t device_id() const override { return dev; }
    };
    auto s = std::make_unique<Stream>();
    s->dev = device;
    return std::unique_ptr<CopyStream>(std::move(s));
  }
  StatusOr<std::unique_ptr<MemoryBuffer>> OpenIpcHandle(const std::string& handle, int64_t device,
                                                        uint64_t byte_size) override {
    if (handle[0] == 'x') return InvalidArgument("cannot open the CUDA IPC handle");
    if (byte_size > ipc_allocation_bytes) return InvalidArgument("allocation too small");
    opened.push_back(handle);
    char* p = new char[ipc_allocation_bytes];
    std::memset(p, 7, ipc_allocation_bytes);
    last_mapping = p;
    return std::make_unique<MemoryBuffer>(p, byte_size, MemoryType::kGpu, device,
                                          [](char* q) { delete[] q; });
  }
  std::vector<std::string> opened;
  char* last_mapping = nullptr;
};

}  // namespace inferd::testing_fakes
