// libFuzzer target: shared-memory parameters. One POSIX shared-memory object
// (64 KiB) is created at start-up; each input registers a region of it with
// fuzzed offset and size, then decodes an infer request whose input and
// output parameters (region, offset, byte size; JSON from the input) point
// into the registered regions. Out-of-bounds slices must be refused.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "frontend/http/infer_codec.h"
#include "shm/shm_manager.h"

namespace {

constexpr size_t kObjectBytes = 64 << 10;

const std::string& Key() {
  static const std::string key = [] {
    // One fixed name, reused by every run: libFuzzer ends a timed run
    // without running atexit handlers, so a per-process name would leave
    // one object in /dev/shm per run.
    std::string k = "/inferd_fuzz_shm_params";
    const int fd = shm_open(k.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, kObjectBytes) != 0) std::abort();
    close(fd);
    std::atexit([] { shm_unlink(Key().c_str()); });
    return k;
  }();
  return key;
}

uint64_t Read64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  if (size < 16) return 0;
  SharedMemoryManager shm;
  // Mostly small values, sometimes huge ones (overflow checks).
  uint64_t offset = Read64(data), bytes = Read64(data + 8);
  if ((offset >> 63) == 0) offset %= kObjectBytes + 16;
  if ((bytes >> 63) == 0) bytes %= kObjectBytes + 16;
  Status reg = shm.Register("r", Key(), offset, bytes);
  (void)reg;
  // The rest is the `parameters` object of INPUT0 and of OUTPUT0.
  const std::string params(reinterpret_cast<const char*>(data + 16), size - 16);
  auto body = std::make_shared<std::string>(
      "{\"inputs\":[{\"name\":\"INPUT0\",\"shape\":[4],\"datatype\":\"FP32\",\"parameters\":" +
      params + "}],\"outputs\":[{\"name\":\"OUTPUT0\",\"parameters\":" + params + "}]}");
  auto decoded = http::DecodeInferRequest(body, std::nullopt, "m", -1, http::DecodeLimits{}, &shm);
  if (decoded.ok()) {
    for (const auto& in : decoded->request->inputs) {
      // Touch every byte: an out-of-bounds view crashes under ASan.
      volatile char sink = 0;
      for (size_t i = 0; i < in.data.byte_size; ++i) sink ^= in.data.data[i];
      (void)sink;
    }
  }
  return 0;
}
