#include "shm/shm_manager.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/shape.h"
#include "shm/cuda_shm_manager.h"

namespace inferd {

SharedMemoryRegion::~SharedMemoryRegion() {
  if (base_ != nullptr) munmap(base_, map_length_);
}

StatusOr<char*> SharedMemoryRegion::Slice(uint64_t offset, uint64_t size) const {
  auto end = CheckedAdd(offset, size);
  if (!end || offset > byte_size_ || *end > byte_size_) {
    return InvalidArgument("shared memory region '" + name_ + "' has " +
                           std::to_string(byte_size_) + " bytes; offset " + std::to_string(offset) +
                           " with size " + std::to_string(size) + " is out of bounds");
  }
  return data() + offset;
}

StatusOr<SharedMemorySlice> ResolveSharedMemory(const SharedMemoryManager* shm,
                                                const std::string& where, const std::string& region,
                                                uint64_t offset, uint64_t byte_size) {
  if (shm == nullptr) {
    return InvalidArgument(where + ": shared memory is not enabled on this server");
  }
  auto found = shm->Find(region);
  if (!found.ok() && shm->cuda() != nullptr) {
    // Region names are one namespace: a CUDA region is found by the same name.
    if (auto cuda = shm->cuda()->Find(region); cuda.ok()) {
      Status in_range = (*cuda)->CheckRange(offset, byte_size);
      if (!in_range.ok()) return InvalidArgument(where + ": " + in_range.message());
      return SharedMemorySlice{nullptr, std::move(*cuda), offset, byte_size, nullptr};
    }
  }
  if (!found.ok()) return InvalidArgument(where + ": " + found.status().message());
  auto slice = (*found)->Slice(offset, byte_size);
  if (!slice.ok()) return InvalidArgument(where + ": " + slice.status().message());
  return SharedMemorySlice{std::move(*found), nullptr, offset, byte_size, *slice};
}

StatusOr<BufferView> SharedMemoryInputView(const SharedMemorySlice& slice, const std::string& where,
                                           InferRequest& req) {
  if (slice.cuda_region) {
    auto copy = std::make_shared<OwnedBuffer>(static_cast<size_t>(slice.byte_size));
    Status copied = slice.cuda_region->CopyToHost(slice.offset, slice.byte_size, copy->data());
    if (!copied.ok()) return copied.WithPrefix(where);
    BufferView view = copy->view();
    req.Hold(std::move(copy));
    return view;
  }
  req.Hold(slice.region);
  return BufferView{slice.data, static_cast<size_t>(slice.byte_size), MemoryType::kCpu, 0};
}

Status WriteSharedMemoryOutput(const SharedMemoryOutput& dst, const std::string& output_name,
                               const char* data, size_t size) {
  if (size > dst.byte_size) {
    return InvalidArgument("shared memory size specified with the request for output '" +
                           output_name + "' (" + std::to_string(dst.byte_size) +
                           " bytes) should be at least " + std::to_string(size) +
                           " bytes to hold the results");
  }
  if (dst.cuda_region) return dst.cuda_region->CopyFromHost(dst.offset, data, size);
  if (size > 0) std::memcpy(dst.data, data, size);
  return Status::Ok();
}

bool SharedMemoryManager::IsValidKey(const std::string& key) {
  // One leading slash, then a single path component of portable characters.
  if (key.size() < 2 || key.size() > 255 || key[0] != '/') return false;
  const std::string rest = key.substr(1);
  if (rest == "." || rest == "..") return false;
  for (char c : rest) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return rest.rfind("triton_python_backend_shm_region_", 0) != 0;
}

Status SharedMemoryManager::Register(const std::string& name, const std::string& key,
                                     uint64_t offset, uint64_t byte_size) {
  if (name.empty() || name.size() > 255) {
    return InvalidArgument("shared memory region name must be 1 to 255 bytes");
  }
  if (!IsValidKey(key)) {
    return InvalidArgument("shared memory key for region '" + name +
                           "' must be '/' followed by 1 to 254 characters from [A-Za-z0-9._-] "
                           "(one path component)");
  }
  if (byte_size == 0) {
    return InvalidArgument("shared memory region '" + name + "' must have a non-zero byte_size");
  }
  auto end = CheckedAdd(offset, byte_size);
  if (!end || *end > static_cast<uint64_t>(INT64_MAX)) {
    return InvalidArgument("shared memory region '" + name + "': offset + byte_size overflows");
  }
  {
    MutexLock lock(mu_);
    if (regions_.count(name)) {
      return AlreadyExists("shared memory region '" + name + "' already in manager");
    }
  }
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return InvalidArgument("unable to open the shared memory object for region '" + name +
                           "' (does it exist, and may the server read and write it?)");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < *end) {
    close(fd);
    return InvalidArgument("shared memory region '" + name + "': offset " + std::to_string(offset) +
                           " + byte_size " + std::to_string(byte_size) +
                           " is past the end of the shared memory object (" +
                           std::to_string(st.st_size) + " bytes)");
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  auto region = std::make_shared<SharedMemoryRegion>();
  region->name_ = name;
  region->key_ = key;
  region->offset_ = offset;
  region->byte_size_ = byte_size;
  region->map_offset_ = offset / page * page;
  region->map_length_ = static_cast<size_t>(*end - region->map_offset_);
  void* p = mmap(nullptr, region->map_length_, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 static_cast<off_t>(region->map_offset_));
  close(fd);
  if (p == MAP_FAILED) {
    return InvalidArgument("unable to map shared memory region '" + name + "'");
  }
  region->base_ = static_cast<char*>(p);
  MutexLock lock(mu_);
  if (!regions_.emplace(name, region).second) {
    return AlreadyExists("shared memory region '" + name + "' already in manager");
  }
  return Status::Ok();
}

Status SharedMemoryManager::Unregister(const std::string& name) {
  MutexLock lock(mu_);
  if (name.empty()) {
    regions_.clear();
    return Status::Ok();
  }
  // A name that is not registered (or is a CUDA region) is nothing to do,
  // as in Triton: clients unregister defensively before registering.
  regions_.erase(name);
  return Status::Ok();
}

StatusOr<std::vector<RegionStatus>> SharedMemoryManager::GetStatus(const std::string& name) const {
  std::vector<RegionStatus> out;
  MutexLock lock(mu_);
  for (const auto& [n, r] : regions_) {
    if (!name.empty() && n != name) continue;
    out.push_back(RegionStatus{n, r->key(), r->offset(), r->byte_size()});
  }
  if (!name.empty() && out.empty()) {
    return NotFound("Unable to find system shared memory region: '" + name + "'");
  }
  return out;
}

StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryManager::Find(
    const std::string& name) const {
  MutexLock lock(mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return NotFound("Unable to find shared memory region: '" + name + "'");
  }
  return it->second;
}

}  // namespace inferd
