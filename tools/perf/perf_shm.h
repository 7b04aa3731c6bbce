// infer-perf --shared-memory system: the request's inputs (and outputs) live
// in one POSIX shared-memory object that the server maps, registered through
// the server's system shared-memory API (HTTP or gRPC, libinferclient), so
// requests carry references instead of tensor bytes.
//
// Ownership: a SystemShmRegion owns the object, its mapping and its
// registration; the destructor unregisters, unmaps and unlinks. Threading:
// created and destroyed by the main thread; workers only send requests that
// point into it (the server's writes of outputs from concurrent requests
// overlap; infer-perf never reads them). Errors: Create returns nullptr with
// a message naming the step that failed.
#pragma once

#include <memory>
#include <string>

#include "inferd/client/client.h"

namespace inferd::perf {

class SystemShmRegion {
 public:
  // Copies `request`'s input bytes into a new object, registers it as
  // region "infer-perf-<pid>" and rewrites the request to point into it.
  // Outputs go there too, `output_bytes` each, when it is > 0 and `outputs`
  // names them (a sized slot per output); otherwise they come back inline.
  static std::unique_ptr<SystemShmRegion> Create(client::Client& control,
                                                 client::InferRequest& request,
                                                 const std::vector<std::string>& outputs,
                                                 size_t output_bytes, std::string& error);
  ~SystemShmRegion();
  SystemShmRegion(const SystemShmRegion&) = delete;
  SystemShmRegion& operator=(const SystemShmRegion&) = delete;

  const std::string& name() const { return name_; }
  size_t size() const { return size_; }

 private:
  SystemShmRegion() = default;
  client::Client* control_ = nullptr;
  std::string name_, key_;
  void* addr_ = nullptr;
  size_t size_ = 0;
  bool registered_ = false;
};

}  // namespace inferd::perf
