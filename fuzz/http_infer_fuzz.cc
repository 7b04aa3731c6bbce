// libFuzzer target: the HTTP infer body (KServe v2 JSON with Triton's binary
// tensor extension, and the raw binary form), decoded and then validated
// against a fixed model as the server does; then each decoded input is
// echoed as an output (as the identity backend does) and the response is
// encoded: whatever the bytes (NaN, infinities, BYTES that are not UTF-8),
// an encoded JSON header must be strict JSON, or the fuzzer aborts.
//
// Input layout: byte 0 picks the mode (JSON only / JSON header + binary with
// byte 1 as the header length / raw binary); the rest is the body.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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
  if (!decoded.ok()) return 0;
  Status s = ValidateRequest(spec, *decoded->request);
  (void)s;
  InferResponse response;
  response.model_name = "m";
  response.id = decoded->request->id;
  for (const auto& in : decoded->request->inputs) {
    auto& out = response.AddOutput(in.name, in.datatype, in.shape, in.data.byte_size);
    if (in.data.byte_size > 0) std::memcpy(out.buffer.data(), in.data.data, in.data.byte_size);
  }
  auto encoded = http::EncodeInferResponse(response, decoded->encoding);
  if (!encoded.ok()) return 0;
  const size_t json_len = encoded->header_length.value_or(encoded->body.size());
  rapidjson::Document doc;  // strict: no NaN/Infinity literals, UTF-8 checked
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(encoded->body.data(), json_len);
  if (doc.HasParseError()) std::abort();
  return 0;
}
