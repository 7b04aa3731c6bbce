#include "perf_shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace inferd::perf {

std::unique_ptr<SystemShmRegion> SystemShmRegion::Create(client::Client& control,
                                                         client::InferRequest& request,
                                                         const std::vector<std::string>& outputs,
                                                         size_t output_bytes, std::string& error) {
  std::unique_ptr<SystemShmRegion> r(new SystemShmRegion);
  r->control_ = &control;
  r->name_ = "infer-perf-" + std::to_string(getpid());
  r->key_ = "/" + r->name_;
  size_t total = 0;
  for (const auto& t : request.inputs) total += t.data.size();
  const size_t out_total = output_bytes * outputs.size();
  r->size_ = std::max<size_t>(total + out_total, 1);
  const int fd = shm_open(r->key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    error = "shm_open " + r->key_ + ": " + std::strerror(errno);
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(r->size_)) != 0) {
    error = "ftruncate " + r->key_ + ": " + std::strerror(errno);
    close(fd);
    shm_unlink(r->key_.c_str());
    return nullptr;
  }
  r->addr_ = mmap(nullptr, r->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (r->addr_ == MAP_FAILED) {
    r->addr_ = nullptr;
    error = "mmap " + r->key_ + ": " + std::strerror(errno);
    shm_unlink(r->key_.c_str());
    return nullptr;
  }
  client::ClientStatus st = control.RegisterSystemSharedMemory(r->name_, r->key_, 0, r->size_);
  if (!st.ok) {
    error = "registering shared memory " + r->name_ + " with the server: " + st.message;
    return nullptr;  // the destructor unmaps and unlinks
  }
  r->registered_ = true;
  size_t offset = 0;
  for (auto& t : request.inputs) {
    std::memcpy(static_cast<char*>(r->addr_) + offset, t.data.data(), t.data.size());
    t.shm_region = r->name_;
    t.shm_offset = offset;
    t.shm_byte_size = t.data.size();
    offset += t.data.size();
    t.data.clear();
  }
  if (output_bytes > 0) {
    request.outputs.clear();
    for (const auto& name : outputs) {
      client::RequestedOutput o(name);
      o.shm_region = r->name_;
      o.shm_offset = offset;
      o.shm_byte_size = output_bytes;
      offset += output_bytes;
      request.outputs.push_back(std::move(o));
    }
  }
  return r;
}

SystemShmRegion::~SystemShmRegion() {
  if (registered_) (void)control_->UnregisterSystemSharedMemory(name_);
  if (addr_) munmap(addr_, size_);
  shm_unlink(key_.c_str());
}

}  // namespace inferd::perf
