// Tensor buffers: where bytes live and who owns them.
//
// BufferView never owns: it points into memory kept alive by its owner
// (an InferRequest's holders, a response's OwnedBuffer, a shared-memory
// region). Memory types travel with every view so that GPU memory can be
// handed around without the core assuming host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace inferd {

enum class MemoryType : int { kCpu = 0, kCpuPinned = 1, kGpu = 2 };

struct BufferView {
  const char* data = nullptr;
  size_t byte_size = 0;
  MemoryType memory_type = MemoryType::kCpu;
  int64_t device_id = 0;
};

// A heap buffer that is not zero-filled on creation (outputs are written in
// full by whoever allocates them).
class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  explicit OwnedBuffer(size_t size)
      : data_(size ? std::make_unique_for_overwrite<char[]>(size) : nullptr), size_(size) {}

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  BufferView view() const { return BufferView{data_.get(), size_, MemoryType::kCpu, 0}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

}  // namespace inferd
