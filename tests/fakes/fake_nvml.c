/* A stand-in for libnvidia-ml.so.1 with a fixed table of two GPUs, for the
 * GPU metrics test: inferd's NVML source dlopens it like the real library.
 * GPU 0 answers every query; GPU 1 has no power or energy readings (as on
 * GPUs whose driver does not support them). Energy grows by 1500 mJ per
 * read. Test-only; exports the NVML functions inferd binds. */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3 };

static int initialized = 0;
static unsigned long long energy_mj = 1000000;
static char devices[2];

static int Index(nvmlDevice_t d) {
  if ((char*)d == &devices[0]) return 0;
  if ((char*)d == &devices[1]) return 1;
  return -1;
}

nvmlReturn_t nvmlInit_v2(void) {
  initialized = 1;
  return kSuccess;
}
nvmlReturn_t nvmlShutdown(void) {
  initialized = 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!initialized) return kUninitialized;
  *count = 2;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i > 1) return kInvalidArgument;
  *d = (nvmlDevice_t)&devices[i];
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned int size) {
  int i = Index(d);
  if (i < 0) return kInvalidArgument;
  snprintf(uuid, size, "GPU-fake-%d", i);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  int i = Index(d);
  if (i < 0) return kInvalidArgument;
  u->gpu = i == 0 ? 42 : 7;
  u->memory = 10;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  int i = Index(d);
  if (i < 0) return kInvalidArgument;
  m->total = 150754820096ULL;
  m->used = i == 0 ? 1073741824ULL : 0;
  m->free = m->total - m->used;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* mw) {
  if (Index(d) != 0) return kNotSupported;
  *mw = 123456;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int* mw) {
  if (Index(d) != 0) return kNotSupported;
  *mw = 700000;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long* mj) {
  if (Index(d) != 0) return kNotSupported;
  energy_mj += 1500;
  *mj = energy_mj;
  return kSuccess;
}
