// libFuzzer target: the HTTP infer body (KServe v2 JSON with Triton's binary
// tensor extension, and the raw binary form), decoded and then validated
// against a fixed model as the server does.
//
// Input layout: byte 0 picks the mode (JSON only / JSON header + binary with
// byte 1 as the header length / raw binary); the rest is the body.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/request_validator.h"
#include "frontend/http/infer_codec.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  if (size < 2) return 0;
  const uint8_t mode = data[0] % 3;
  const size_t header_byte = data[1];
  auto body = std::make_shared<std::string>(reinterpret_cast<const char*>(data + 2), size - 2);
  static const ModelSpec spec = fuzz::TestSpec();
  StatusOr<http::DecodedInfer> decoded = Internal("unset");
  if (mode == 2) {
    decoded = http::DecodeRawBinaryRequest(body, spec, -1);
  } else {
    std::optional<size_t> header_length;
    if (mode == 1) header_length = header_byte;
    http::DecodeLimits limits;
    limits.max_json_depth = 32;
    decoded = http::DecodeInferRequest(body, header_length, "m", -1, limits, nullptr);
  }
  if (decoded.ok()) {
    Status s = ValidateRequest(spec, *decoded->request);
    (void)s;
  }
  return 0;
}
