// JSON tensor `data` (KServe v2 HTTP): a request input's JSON array checked
// against its shape and datatype and converted into request-owned bytes.
// Part of the HTTP infer codec (infer_codec.h), in its own file because the
// per-datatype rules are a table of their own.
//
// The rules, stricter than Triton's on purpose (docs/decisions.md): an
// element must fit its datatype exactly; nothing is truncated or wrapped.
//   BOOL          true / false only.
//   INT8..INT64   a JSON integer (no fraction, no exponent) within the type's
//   UINT8..UINT64 range; UINT64 takes the whole 0..2^64-1.
//   FP32          any JSON number whose FP32 rounding is finite (1e39 is out
//                 of range; 1e-50 becomes 0 and 0.1 is rounded, as any FP32
//                 client would); NaN / Infinity / -Infinity as the parser's
//                 literals or as the strings "NaN", "Infinity", "-Infinity"
//                 (what inferd writes for them in responses).
//   FP64          any JSON number; the same non-finite spellings.
//   FP16, BF16    not in JSON (binary only, as Triton).
//   BYTES         JSON strings.
//
// Errors are INVALID_ARGUMENT naming the input, the flat (row-major) element
// index and the element as written: "input 'X': element 3 (1099511627776)
// is out of range for INT32 (-2147483648 to 2147483647)".
//
// Thread-safety: pure functions of their arguments (the request is written).
#pragma once

#include <rapidjson/document.h>

#include "core/infer_request.h"
#include "core/status.h"
#include "frontend/http/infer_codec.h"

namespace inferd::http {

// Checks `data` (a possibly nested array) against `input`'s shape and
// datatype, with the nesting and BYTES limits of `limits`, then converts it
// into a buffer owned by `request` and points `input.data` at it. Nothing
// is allocated before the element count has been checked.
Status DecodeJsonData(const rapidjson::Value& data, InferInput& input, InferRequest& request,
                      const DecodeLimits& limits);

// "NaN", "Infinity" or "-Infinity" for a non-finite value, the JSON strings
// responses carry them as (infer_encode.cc); nullptr for a finite one.
const char* NonFiniteName(double value);

}  // namespace inferd::http
