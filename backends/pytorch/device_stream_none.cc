// DeviceStream for a libtorch without CUDA (Debian's): no GPU instance can
// be made, and the reason says which libtorch to use instead.
#include "common/backend_util.h"
#include "pytorch/device_stream.h"

namespace inferd_backend {

std::string CudaUnavailableReason(int) {
  return "this libtorch was built without CUDA (build the pytorch backend against a CUDA "
         "libtorch, e.g. the torch Python package's: see docs/gpu.md)";
}

std::unique_ptr<DeviceStream> NewDeviceStream(const c10::Device&) {
  Fail(INFERD_ERROR_UNAVAILABLE, CudaUnavailableReason(0));
}

}  // namespace inferd_backend
