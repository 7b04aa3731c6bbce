#include "shm/cuda_shm_manager.h"

#include <cstring>

namespace inferd {
namespace {

std::string NotFoundMessage(const std::string& name) {
  return "Unable to find cuda shared memory region: '" + name + "'";
}

// Staging buffers above this are not kept between copies.
constexpr size_t kMaxCachedStaging = size_t{256} << 20;

}  // namespace

Status CudaSharedMemoryRegion::CheckRange(uint64_t offset, uint64_t size) const {
  uint64_t end = 0;
  if (__builtin_add_overflow(offset, size, &end) || offset > byte_size_ || end > byte_size_) {
    return InvalidArgument("cuda shared memory region '" + name_ + "' has " +
                           std::to_string(byte_size_) + " bytes; offset " + std::to_string(offset) +
                           " with size " + std::to_string(size) + " is out of bounds");
  }
  return Status::Ok();
}

Status CudaSharedMemoryRegion::CopyToHost(uint64_t offset, uint64_t size, char* dst) const {
  INFERD_RETURN_IF_ERROR(CheckRange(offset, size));
  if (size == 0) return Status::Ok();
  auto stage = staging_->Acquire(size);
  if (!stage.ok()) return stage.status();
  MutexLock lock(copy_mu_);
  INFERD_RETURN_IF_ERROR(stream_->CopyAsync((*stage)->data(), (*stage)->memory_type(),
                                            mapping_->data() + offset, MemoryType::kGpu, size));
  INFERD_RETURN_IF_ERROR(stream_->Synchronize());
  std::memcpy(dst, (*stage)->data(), size);
  return Status::Ok();
}

Status CudaSharedMemoryRegion::CopyFromHost(uint64_t offset, const char* src, uint64_t size) const {
  INFERD_RETURN_IF_ERROR(CheckRange(offset, size));
  if (size == 0) return Status::Ok();
  auto stage = staging_->Acquire(size);
  if (!stage.ok()) return stage.status();
  std::memcpy((*stage)->data(), src, size);
  MutexLock lock(copy_mu_);
  INFERD_RETURN_IF_ERROR(stream_->CopyAsync(mapping_->data() + offset, MemoryType::kGpu,
                                            (*stage)->data(), (*stage)->memory_type(), size));
  return stream_->Synchronize();
}

CudaSharedMemoryManager::CudaSharedMemoryManager(std::shared_ptr<DeviceMemory> device)
    : device_(std::move(device)), staging_(device_, kMaxCachedStaging) {}

Status CudaSharedMemoryManager::Register(const std::string& name, const std::string& raw_handle,
                                         int64_t device_id, uint64_t byte_size) {
  const std::string prefix = "failed to register CUDA shared memory region '" + name + "'";
  const std::string what = prefix + ": ";
  if (name.empty()) return InvalidArgument("a CUDA shared memory region needs a name");
  {
    MutexLock lock(mu_);
    if (regions_.count(name)) {
      return AlreadyExists(what + "a region of that name is already registered");
    }
  }
  if (device_->DeviceCount() == 0) return Unavailable(what + device_->Unavailable());
  if (raw_handle.size() != kCudaIpcHandleSize) {
    return InvalidArgument(what + "'raw_handle' must be the " + std::to_string(kCudaIpcHandleSize) +
                           " bytes of a cudaIpcMemHandle_t, got " +
                           std::to_string(raw_handle.size()));
  }
  if (device_id < 0 || device_id >= device_->DeviceCount()) {
    return InvalidArgument(what + "GPU " + std::to_string(device_id) +
                           " does not exist (this server has " +
                           std::to_string(device_->DeviceCount()) + ")");
  }
  if (byte_size == 0) return InvalidArgument(what + "'byte_size' must be positive");
  auto mapping = device_->OpenIpcHandle(raw_handle, device_id, byte_size);
  if (!mapping.ok()) return mapping.status().WithPrefix(prefix);
  auto stream = device_->NewStream(device_id);
  if (!stream.ok()) return stream.status().WithPrefix(prefix);
  auto r = std::make_shared<CudaSharedMemoryRegion>();
  r->name_ = name;
  r->device_id_ = device_id;
  r->byte_size_ = byte_size;
  r->mapping_ = std::move(*mapping);
  r->stream_ = std::move(*stream);
  r->staging_ = &staging_;
  MutexLock lock(mu_);
  if (!regions_.emplace(name, std::move(r)).second) {
    return AlreadyExists(what + "a region of that name is already registered");
  }
  return Status::Ok();
}

Status CudaSharedMemoryManager::Unregister(const std::string& name) {
  MutexLock lock(mu_);
  if (name.empty()) {
    regions_.clear();
    return Status::Ok();
  }
  regions_.erase(name);  // an unknown name is nothing to do, as in Triton
  return Status::Ok();
}

StatusOr<std::vector<CudaRegionStatus>> CudaSharedMemoryManager::GetStatus(
    const std::string& name) const {
  MutexLock lock(mu_);
  std::vector<CudaRegionStatus> out;
  for (const auto& [n, r] : regions_) {
    if (!name.empty() && n != name) continue;
    out.push_back(CudaRegionStatus{n, r->device_id(), r->byte_size()});
  }
  if (!name.empty() && out.empty()) return NotFound(NotFoundMessage(name));
  return out;
}

StatusOr<std::shared_ptr<CudaSharedMemoryRegion>> CudaSharedMemoryManager::Find(
    const std::string& name) const {
  MutexLock lock(mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) return NotFound(NotFoundMessage(name));
  return it->second;
}

}  // namespace inferd
