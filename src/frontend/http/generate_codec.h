// The codec of Triton's generate extension (/generate, /generate_stream):
// a flat JSON object in, mapped onto the model's inputs by name, and a flat
// JSON object out per response. Pure functions of bytes and the model's
// ModelSpec (no sockets, no server), unit-tested and fuzzed.
//
// Request (docs/http.md, "Generate extension"): each top-level key is an
// input when the model has an input of that name, else a request parameter
// (string, bool, int64, double; anything else is INVALID_ARGUMENT). `id`
// also sets the request id; `parameters` is an object whose members follow
// the same rule. An input's value is a scalar or a flat array of its
// datatype; its shape is the model's metadata shape with wildcards filled
// from the element count (the innermost wildcard takes what the fixed dims
// leave, the others 1). Input bytes are counted against `max_input_bytes`.
//
// Response: one JSON object, keys in byte-wise order: `id` (when set),
// `model_name`, `model_version`, each response parameter, each output (one
// element: the bare value, else a flat array; BYTES as strings). On a name
// clash the first of these wins.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/infer_request.h"
#include "core/model_spec.h"
#include "core/status.h"

namespace inferd::http {

struct GenerateLimits {
  size_t max_input_bytes = 64 << 20;      // --http-max-input-size
  size_t max_json_depth = 100;            // --http-max-json-depth
  uint64_t max_bytes_elements = 1 << 24;  // --max-bytes-elements
};

// Decodes a generate body into a request for `model_name`/`model_version`
// whose inputs follow `spec`. An empty body is an empty object (the core
// then names the missing inputs). Errors are INVALID_ARGUMENT.
StatusOr<std::unique_ptr<InferRequest>> DecodeGenerateRequest(std::string_view body,
                                                              const ModelSpec& spec,
                                                              const std::string& model_name,
                                                              int64_t model_version,
                                                              const GenerateLimits& limits);

// The JSON object of one response (strict JSON: non-finite floats as the
// strings "NaN", "Infinity", "-Infinity"). FP16/BF16 outputs and BYTES
// elements that are not UTF-8 are INVALID_ARGUMENT naming the output.
StatusOr<std::string> EncodeGenerateResponse(const InferResponse& response);

// One Server-Sent Event carrying `json`: "data: <json>\n\n".
std::string SseEvent(std::string_view json);

// The shape a generate input of `count` elements gets from the metadata
// shape `dims` (-1: wildcard); nullopt if the count does not fit.
std::optional<Shape> FillGenerateShape(const Shape& dims, uint64_t count);

}  // namespace inferd::http
