// The pytorch backend's view of CUDA: one stream per GPU instance, made
// current on the instance's thread while it executes, so that instances of
// several models on one GPU overlap instead of queueing on the default
// stream. Only device_stream_cuda.cc includes c10/cuda; CMake compiles it
// when the libtorch found has CUDA (target c10_cuda), else
// device_stream_none.cc, whose streams cannot be made.
//
// Threading: a DeviceStream is used by its instance's thread only.
// Errors: NewDeviceStream throws BackendError (UNAVAILABLE) when this
// libtorch has no CUDA or the device does not exist.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <string>

namespace inferd_backend {

class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  // Makes the stream current on this thread (and the device) until the
  // returned guard is destroyed.
  virtual std::shared_ptr<void> Enter() = 0;
  // Waits for everything queued on the stream.
  virtual void Synchronize() = 0;
};

// A new stream from libtorch's pool for `device` (a CUDA device).
std::unique_ptr<DeviceStream> NewDeviceStream(const c10::Device& device);

// "" when this libtorch can run on CUDA device `index`; else why not.
std::string CudaUnavailableReason(int index);

}  // namespace inferd_backend
