// C++ helpers for writing an inferd backend on top of the C ABI of
// include/inferd/backend.h. Header-only, no dependency on the server: a
// backend built elsewhere can copy it.
//
//   struct MyModel {     // one per loaded model version
//     explicit MyModel(const InferdModelInfo& info);        // throws on a bad config
//   };
//   struct MyInstance {  // one per instance; Execute runs on its own thread
//     MyInstance(MyModel& model, const InferdInstanceInfo& info);
//     void Execute(InferdRequest* const* requests, uint32_t n);
//   };
//   extern "C" INFERD_BACKEND_EXPORT const InferdBackendApi* inferd_backend_entry(uint32_t) {
//     return &inferd_backend::BackendTable<MyModel, MyInstance>::kApi;
//   }
//
// Every entry point of the table catches every exception: BackendError
// keeps its code, std::bad_alloc becomes RESOURCE_EXHAUSTED, anything else
// INTERNAL. Nothing crosses the C boundary.
#pragma once

#include <inferd/backend.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace inferd_backend {

// The server's service table, set by the table's initialize.
inline const InferdHostApi*& HostSlot() {
  static const InferdHostApi* host = nullptr;
  return host;
}
inline const InferdHostApi& Host() { return *HostSlot(); }

// An error with a code, thrown inside a backend and turned into an
// InferdError at the boundary.
class BackendError : public std::runtime_error {
 public:
  BackendError(InferdErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  InferdErrorCode code() const { return code_; }

 private:
  InferdErrorCode code_;
};

[[noreturn]] inline void Fail(InferdErrorCode code, const std::string& message) {
  throw BackendError(code, message);
}
[[noreturn]] inline void ThrowInvalidArgument(const std::string& message) {
  Fail(INFERD_ERROR_INVALID_ARGUMENT, message);
}

// Throws the host's error (and deletes it) if there is one.
inline void ThrowIfError(InferdError* error) {
  if (error == nullptr) return;
  const InferdErrorCode code = Host().error_code(error);
  std::string message = Host().error_message(error);
  Host().error_delete(error);
  throw BackendError(code, message);
}

// Runs `f` and returns NULL, or the error it threw.
template <typename F>
InferdError* Guard(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const BackendError& e) {
    return Host().error_new(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return Host().error_new(INFERD_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Host().error_new(INFERD_ERROR_INTERNAL, e.what());
  } catch (...) {
    return Host().error_new(INFERD_ERROR_INTERNAL, "unknown exception in backend");
  }
}

// ---- datatypes and shapes --------------------------------------------------

inline size_t TypeSize(InferdDataType t) {
  switch (t) {
    case INFERD_TYPE_BOOL:
    case INFERD_TYPE_UINT8:
    case INFERD_TYPE_INT8:
      return 1;
    case INFERD_TYPE_UINT16:
    case INFERD_TYPE_INT16:
    case INFERD_TYPE_FP16:
    case INFERD_TYPE_BF16:
      return 2;
    case INFERD_TYPE_UINT32:
    case INFERD_TYPE_INT32:
    case INFERD_TYPE_FP32:
      return 4;
    case INFERD_TYPE_UINT64:
    case INFERD_TYPE_INT64:
    case INFERD_TYPE_FP64:
      return 8;
    default:
      return 0;  // BYTES and INVALID have no fixed size
  }
}

inline const char* TypeName(InferdDataType t) {
  static const char* const kNames[] = {"INVALID", "BOOL", "UINT8", "UINT16", "UINT32",
                                       "UINT64",  "INT8", "INT16", "INT32",  "INT64",
                                       "FP16",    "FP32", "FP64",  "BYTES",  "BF16"};
  return t >= 0 && t <= INFERD_TYPE_BF16 ? kNames[t] : "INVALID";
}

inline std::string ShapeString(const int64_t* shape, uint32_t n) {
  std::string s = "[";
  for (uint32_t i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}
inline std::string ShapeString(const std::vector<int64_t>& shape) {
  return ShapeString(shape.data(), static_cast<uint32_t>(shape.size()));
}

// ---- model configuration -----------------------------------------------------

// The value of config parameter `key`, or nullptr.
inline const char* FindParameter(const InferdModelInfo& info, const char* key) {
  for (uint32_t i = 0; i < info.parameter_count; ++i) {
    if (std::strcmp(info.parameters[i].key, key) == 0) return info.parameters[i].value;
  }
  return nullptr;
}

// Integer parameter `key` in [lo, hi], `fallback` if absent; throws
// INVALID_ARGUMENT naming the parameter otherwise.
inline int64_t IntParameter(const InferdModelInfo& info, const char* key, int64_t fallback,
                            int64_t lo, int64_t hi) {
  const char* v = FindParameter(info, key);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi) {
    ThrowInvalidArgument(std::string("parameter '") + key + "' must be an integer between " +
                         std::to_string(lo) + " and " + std::to_string(hi) + ", got '" + v + "'");
  }
  return x;
}

// Boolean parameter: true/false, 1/0, on/off (any case); `fallback` if absent.
inline bool BoolParameter(const InferdModelInfo& info, const char* key, bool fallback) {
  const char* v = FindParameter(info, key);
  if (v == nullptr || *v == '\0') return fallback;
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "true" || s == "1" || s == "on" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "off" || s == "no") return false;
  ThrowInvalidArgument(std::string("parameter '") + key + "' must be true or false, got '" + v +
                       "'");
}

// ---- requests ---------------------------------------------------------------

// A request of the batch being executed.
class Request {
 public:
  explicit Request(InferdRequest* r) : r_(r) {}
  InferdRequest* get() const { return r_; }

  // Input `name`, or false if the request has none.
  bool FindInput(const char* name, InferdTensor* out) const {
    InferdError* e = Host().request_input_by_name(r_, name, out);
    if (e == nullptr) return true;
    Host().error_delete(e);
    return false;
  }
  InferdTensor Input(const char* name) const {
    InferdTensor t{};
    if (!FindInput(name, &t))
      ThrowInvalidArgument(std::string("request has no input '") + name + "'");
    return t;
  }
  bool OutputRequested(const char* name) const {
    return Host().request_output_requested(r_, name) != 0;
  }
  // Allocates an output in CPU memory and returns its buffer.
  void* AllocateOutput(const char* name, InferdDataType datatype, const std::vector<int64_t>& shape,
                       uint64_t byte_size) const {
    InferdMemoryType memory = INFERD_MEMORY_CPU;
    int64_t device = 0;
    void* buffer = nullptr;
    ThrowIfError(Host().request_output_alloc(r_, name, datatype, shape.data(),
                                             static_cast<uint32_t>(shape.size()), byte_size,
                                             &memory, &device, &buffer));
    if (memory != INFERD_MEMORY_CPU) {
      Fail(INFERD_ERROR_INTERNAL, "the server allocated a non-CPU output buffer");
    }
    return buffer;
  }
  void SetError(InferdErrorCode code, const std::string& message) const {
    Host().request_set_error(r_, Host().error_new(code, message.c_str()));
  }

 private:
  InferdRequest* r_;
};

// Runs `f(Request)` for each request; an exception fails that request only.
template <typename F>
void ForEachRequest(InferdRequest* const* requests, uint32_t n, F&& f) {
  for (uint32_t i = 0; i < n; ++i) {
    InferdError* e = Guard([&] { f(Request(requests[i])); });
    if (e != nullptr) Host().request_set_error(requests[i], e);
  }
}

// The CPU threads the server gives this batch (ABI v3 request_cpu_threads);
// 0: no choice (no hint, or a server older than v3). Backends whose table
// declares INFERD_BACKEND_CAP_CPU_THREAD_HINT apply it on the calling thread.
inline int CpuThreadsHint(InferdRequest* const* requests, uint32_t n) {
  const InferdHostApi& host = Host();
  if (n == 0 || host.abi_version < 3 || host.request_cpu_threads == nullptr) return 0;
  return static_cast<int>(host.request_cpu_threads(requests[0]));
}

// The CPUs the calling thread may run on (sched_getaffinity; at least 1):
// the default for "every core" in thread counts. Called while a model loads,
// it is the server's --cpu-set (by default the process's allowed CPUs: a
// container's cpuset), not the machine's hardware threads.
inline unsigned UsableCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  // More than CPU_SETSIZE CPUs: the machine's count.
  return std::max(1u, std::thread::hardware_concurrency());
}

// ---- the table ----------------------------------------------------------------

// The backend's function table for model type M and instance type I (see
// the top of this file); `Capabilities`: INFERD_BACKEND_CAP_* bits (v3). Backend state is not used:
// keep global state in statics of the library if any is needed.
template <typename M, typename I, uint32_t Capabilities = 0>
struct BackendTable {
  static InferdError* Initialize(const InferdHostApi* host, void** state) noexcept {
    HostSlot() = host;
    *state = nullptr;
    return nullptr;
  }
  static void Finalize(void*) noexcept {}
  static InferdError* ModelInitialize(void*, const InferdModelInfo* info, void** state) noexcept {
    return Guard([&] { *state = new M(*info); });
  }
  static void ModelFinalize(void* state) noexcept {
    try {
      delete static_cast<M*>(state);
    } catch (...) {
    }
  }
  static InferdError* InstanceInitialize(void* model, const InferdInstanceInfo* info,
                                         void** state) noexcept {
    return Guard([&] { *state = new I(*static_cast<M*>(model), *info); });
  }
  static void InstanceFinalize(void* state) noexcept {
    try {
      delete static_cast<I*>(state);
    } catch (...) {
    }
  }
  static InferdError* InstanceExecute(void* state, InferdRequest* const* requests,
                                      uint32_t n) noexcept {
    return Guard([&] { static_cast<I*>(state)->Execute(requests, n); });
  }

  static constexpr InferdBackendApi kApi = {
      INFERD_BACKEND_ABI_VERSION, &Initialize,      &Finalize,
      &ModelInitialize,           &ModelFinalize,   &InstanceInitialize,
      &InstanceFinalize,          &InstanceExecute, Capabilities,
  };
};

}  // namespace inferd_backend
