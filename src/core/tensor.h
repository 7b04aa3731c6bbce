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
// full by whoever allocates them), or, made by Shared(), a read-only view of
// bytes kept alive by a shared owner (the response cache hands its entries'
// outputs out this way instead of copying them; nothing writes into a
// response's outputs once it has left its producer).
class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  explicit OwnedBuffer(size_t size)
      : data_(size ? std::make_unique_for_overwrite<char[]>(size) : nullptr), size_(size) {}
  // `size` bytes at `bytes`, alive as long as `owner`; must not be written.
  static OwnedBuffer Shared(std::shared_ptr<const void> owner, const char* bytes, size_t size) {
    OwnedBuffer b;
    b.owner_ = std::move(owner);
    b.shared_ = bytes;
    b.size_ = size;
    return b;
  }

  // Writable only when not Shared().
  char* data() { return shared_ ? const_cast<char*>(shared_) : data_.get(); }
  const char* data() const { return shared_ ? shared_ : data_.get(); }
  size_t size() const { return size_; }
  BufferView view() const { return BufferView{data(), size_, MemoryType::kCpu, 0}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  std::shared_ptr<const void> owner_;  // Shared(): keeps `shared_` alive
  const char* shared_ = nullptr;
};

}  // namespace inferd
