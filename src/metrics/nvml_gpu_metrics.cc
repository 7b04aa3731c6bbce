// GpuMetricsSource over NVML, loaded with dlopen: the only file that knows
// NVML. Tested against tests/fakes/fake_nvml.c (a library with the same
// exports and a fixed table of GPUs) and for "library absent -> no source";
// reading a real driver needs a GPU machine (bench/gpu/run.sh scrapes
// /metrics there).
#include <dlfcn.h>

#include "metrics/gpu_metrics.h"

namespace inferd::metrics {
namespace {

// The few NVML declarations used (nvml.h, API v2). inferd does not include
// nvml.h, so it builds without the CUDA toolkit.
using nvmlReturn_t = int;  // an enum in nvml.h; NVML_SUCCESS is 0
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;  // percent of time a kernel ran, over the driver's sample period
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned int kUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*device_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  // Optional: a missing one leaves its metric out.
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;   // mW
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;   // mW
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*) = nullptr;  // mJ
};

template <typename Fn>
void Bind(void* lib, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
}

class NvmlSource : public GpuMetricsSource {
 public:
  struct Device {
    nvmlDevice_t handle;
    std::string uuid;
    std::optional<unsigned long long> energy_at_start_mj;
  };

  NvmlSource(void* lib, NvmlApi api, std::vector<Device> devices)
      : lib_(lib), api_(api), devices_(std::move(devices)) {}

  ~NvmlSource() override {
    api_.shutdown();
    dlclose(lib_);
  }

  std::vector<GpuSample> Sample() override {
    std::vector<GpuSample> out;
    for (const auto& d : devices_) {
      GpuSample s;
      s.uuid = d.uuid;
      nvmlUtilization_t u{};
      if (api_.utilization && api_.utilization(d.handle, &u) == kNvmlSuccess) {
        s.utilization = u.gpu / 100.0;
      }
      nvmlMemory_t m{};
      if (api_.memory && api_.memory(d.handle, &m) == kNvmlSuccess) {
        s.memory_total_bytes = m.total;
        s.memory_used_bytes = m.used;
      }
      unsigned int mw = 0;
      if (api_.power_usage && api_.power_usage(d.handle, &mw) == kNvmlSuccess) {
        s.power_usage_watts = mw / 1000.0;
      }
      if (api_.power_limit && api_.power_limit(d.handle, &mw) == kNvmlSuccess) {
        s.power_limit_watts = mw / 1000.0;
      }
      unsigned long long mj = 0;
      if (d.energy_at_start_mj && api_.energy(d.handle, &mj) == kNvmlSuccess &&
          mj >= *d.energy_at_start_mj) {
        s.energy_joules = static_cast<double>(mj - *d.energy_at_start_mj) / 1000.0;
      }
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  void* lib_;
  NvmlApi api_;
  std::vector<Device> devices_;
};

}  // namespace

std::unique_ptr<GpuMetricsSource> OpenNvml(const std::string& library, std::string* why) {
  auto fail = [&](std::string reason) -> std::unique_ptr<GpuMetricsSource> {
    if (why) *why = std::move(reason);
    return nullptr;
  };
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    return fail("cannot load " + library + (e ? std::string(": ") + e : std::string()));
  }
  NvmlApi api;
  Bind(lib, "nvmlInit_v2", api.init);
  Bind(lib, "nvmlShutdown", api.shutdown);
  Bind(lib, "nvmlDeviceGetCount_v2", api.device_count);
  Bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.device_by_index);
  Bind(lib, "nvmlDeviceGetUUID", api.uuid);
  Bind(lib, "nvmlDeviceGetUtilizationRates", api.utilization);
  Bind(lib, "nvmlDeviceGetMemoryInfo", api.memory);
  Bind(lib, "nvmlDeviceGetPowerUsage", api.power_usage);
  Bind(lib, "nvmlDeviceGetPowerManagementLimit", api.power_limit);
  Bind(lib, "nvmlDeviceGetTotalEnergyConsumption", api.energy);
  if (!api.init || !api.shutdown || !api.device_count || !api.device_by_index || !api.uuid) {
    dlclose(lib);
    return fail(library + " lacks the NVML functions needed");
  }
  if (api.init() != kNvmlSuccess) {
    dlclose(lib);
    return fail("nvmlInit failed");
  }
  unsigned int count = 0;
  std::vector<NvmlSource::Device> devices;
  if (api.device_count(&count) == kNvmlSuccess) {
    for (unsigned int i = 0; i < count; ++i) {
      NvmlSource::Device d{};
      char uuid[kUuidBufferSize] = {};
      if (api.device_by_index(i, &d.handle) != kNvmlSuccess ||
          api.uuid(d.handle, uuid, kUuidBufferSize) != kNvmlSuccess) {
        continue;
      }
      d.uuid = uuid;
      unsigned long long mj = 0;
      if (api.energy && api.energy(d.handle, &mj) == kNvmlSuccess) d.energy_at_start_mj = mj;
      devices.push_back(std::move(d));
    }
  }
  if (devices.empty()) {
    api.shutdown();
    dlclose(lib);
    return fail("NVML sees no GPU");
  }
  return std::make_unique<NvmlSource>(lib, api, std::move(devices));
}

}  // namespace inferd::metrics
