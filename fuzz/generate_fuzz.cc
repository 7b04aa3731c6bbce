// libFuzzer target: a generate extension body (generate_codec.h), decoded
// against a fixed model as the server does and validated; then each decoded
// input is echoed as an output and the response object is encoded: an
// encoded object must be strict JSON, or the fuzzer aborts.
#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/request_validator.h"
#include "frontend/http/generate_codec.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferd;
  static const ModelSpec spec = fuzz::TestSpec();
  http::GenerateLimits limits;
  limits.max_input_bytes = 1 << 16;
  limits.max_json_depth = 32;
  auto decoded = http::DecodeGenerateRequest(
      std::string_view(reinterpret_cast<const char*>(data), size), spec, "m", -1, limits);
  if (!decoded.ok()) return 0;
  Status s = ValidateRequest(spec, **decoded);
  (void)s;
  InferResponse response;
  response.model_name = "m";
  response.id = (*decoded)->id;
  response.parameters = (*decoded)->parameters;
  for (const auto& in : (*decoded)->inputs) {
    auto& out = response.AddOutput(in.name, in.datatype, in.shape, in.data.byte_size);
    if (in.data.byte_size > 0) std::memcpy(out.buffer.data(), in.data.data, in.data.byte_size);
  }
  auto encoded = http::EncodeGenerateResponse(response);
  if (!encoded.ok()) return 0;
  rapidjson::Document doc;  // strict: no NaN/Infinity literals, UTF-8 checked
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(encoded->data(), encoded->size());
  if (doc.HasParseError() || !doc.IsObject()) std::abort();
  return 0;
}
