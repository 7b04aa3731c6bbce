// The HTTP inference codec: KServe v2 JSON bodies with Triton's binary
// tensor extension, decoded into the core InferRequest and encoded from an
// InferResponse. Pure functions of bytes (no sockets), so they are easy to
// test and fuzz.
//
// Zero copy: binary input tensors are views into `body`, which the decoded
// request keeps alive. JSON `data` is converted into request-owned buffers,
// sized only after the element count has been checked against the shape.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"
#include "shm/cuda_shm_manager.h"
#include "shm/shm_manager.h"

namespace inferd::http {

// Bounds checked while decoding, before the decoder allocates for them
// (the core checks the tensor counts again for every front end).
struct DecodeLimits {
  size_t max_json_depth = 100;            // nesting of arrays/objects (--http-max-json-depth)
  size_t max_inputs = 1024;               // --max-request-inputs
  size_t max_outputs = 1024;              // --max-request-outputs
  uint64_t max_bytes_elements = 1 << 24;  // JSON BYTES elements per tensor (--max-bytes-elements)
};

// How each output is to be returned: binary blob, JSON data, or written to
// shared memory.
struct OutputEncoding {
  std::map<std::string, bool> binary;  // outputs listed in the request
  bool binary_default = false;         // request parameter binary_data_output
  std::map<std::string, SharedMemoryOutput> shared_memory;
  bool IsBinary(const std::string& name) const {
    auto it = binary.find(name);
    return it == binary.end() ? binary_default : it->second;
  }
};

struct DecodedInfer {
  std::unique_ptr<InferRequest> request;
  OutputEncoding encoding;
};

// Decodes an infer body. `header_length` is Inference-Header-Content-Length
// (absent: the whole body is JSON). Shared-memory references are resolved
// through `shm` (nullptr: refused) and bounds-checked; the request keeps the
// regions it reads mapped. Errors are INVALID_ARGUMENT naming the offending
// member, tensor or region (JSON that is not UTF-8 is refused; JSON `data`
// must fit its datatype: json_tensor_data.h). Request parameters are
// translated into the neutral types (json_parameters.h), keys untouched: the
// core checks and applies the reserved ones; the codec only reads a boolean
// binary_data_output for the output encoding, and refuses a negative
// sequence_id (JSON writes ids unsigned; gRPC's int64_param carries bits).
StatusOr<DecodedInfer> DecodeInferRequest(const std::shared_ptr<const std::string>& body,
                                          std::optional<size_t> header_length,
                                          const std::string& model_name, int64_t model_version,
                                          const DecodeLimits& limits,
                                          const SharedMemoryManager* shm = nullptr);

// Decodes a raw binary request (Inference-Header-Content-Length: 0): the
// whole body is the data of the model's only input; its shape comes from
// the config (one variable dimension at most, derived from the byte count;
// BYTES bodies are one element). Every output is returned binary.
StatusOr<DecodedInfer> DecodeRawBinaryRequest(const std::shared_ptr<const std::string>& body,
                                              const ModelSpec& spec, int64_t model_version);

struct EncodedResponse {
  std::string body;
  std::optional<size_t> header_length;  // set when binary blobs follow the JSON
};

// Encodes a response as strict JSON (plus binary blobs). FP16/BF16 outputs
// must be binary (INVALID_ARGUMENT otherwise); so must a BYTES output whose
// elements are not UTF-8 (INVALID_ARGUMENT naming the output and element).
// FP32/FP64 NaN and infinities are the JSON strings "NaN", "Infinity",
// "-Infinity" (tritonclient's as_numpy and numpy read them back); names,
// the id and parameter strings that are not UTF-8 are escaped (core/utf8.h). Outputs bound to
// shared memory are written there (an output larger than its region slice is INVALID_ARGUMENT) and
// appear in the JSON with name, datatype and shape only.
StatusOr<EncodedResponse> EncodeInferResponse(const InferResponse& response,
                                              const OutputEncoding& encoding);

// The JSON `data` array of one output ("[1,2,3]"), flat, with the rules of
// EncodeInferResponse (FP16/BF16 and non-UTF-8 BYTES are INVALID_ARGUMENT,
// non-finite floats the strings "NaN", "Infinity", "-Infinity"). The
// generate extension's encoder writes its outputs with it.
StatusOr<std::string> EncodeJsonTensorData(const InferOutput& output);

// Nesting depth of JSON text (arrays and objects, outside strings), counted
// without parsing; stops early once past `limit`.
size_t JsonNestingDepth(const char* data, size_t size, size_t limit);

}  // namespace inferd::http
