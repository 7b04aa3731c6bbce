// DeviceStream on c10::cuda streams (libtorch built with CUDA).
#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "common/backend_util.h"
#include "pytorch/device_stream.h"

namespace inferd_backend {
namespace {

class CudaStream : public DeviceStream {
 public:
  explicit CudaStream(c10::cuda::CUDAStream stream) : stream_(stream) {}
  std::shared_ptr<void> Enter() override {
    return std::make_shared<c10::cuda::CUDAStreamGuard>(stream_);
  }
  void Synchronize() override { stream_.synchronize(); }

 private:
  c10::cuda::CUDAStream stream_;
};

}  // namespace

std::string CudaUnavailableReason(int index) {
  if (!at::hasCUDA()) return "this libtorch sees no CUDA device";
  const int count = static_cast<int>(c10::cuda::device_count());
  if (index < 0 || index >= count) {
    return "GPU " + std::to_string(index) + " does not exist (libtorch sees " +
           std::to_string(count) + ")";
  }
  return "";
}

std::unique_ptr<DeviceStream> NewDeviceStream(const c10::Device& device) {
  if (auto why = CudaUnavailableReason(device.index()); !why.empty()) {
    Fail(INFERD_ERROR_UNAVAILABLE, why);
  }
  return std::make_unique<CudaStream>(
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
}

}  // namespace inferd_backend
