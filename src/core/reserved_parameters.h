// Reserved request parameters: the keys the protocols keep for the server,
// checked and applied to an InferRequest's typed fields in one place for
// every front end.
//
// Front ends translate their wire's request parameters into
// InferRequest::parameters (bool, int64, uint64, double, string) without
// looking at the keys; ValidateRequest calls ApplyReservedParameters once,
// before any other check. The reserved keys and what each accepts:
//
//   sequence_id        int64, uint64 or string -> correlation_id (0 and ""
//                      mean none; an int64 is read as the unsigned id it
//                      carries, as Triton's clients send a uint64 id in it)
//   sequence_start     bool -> sequence_start
//   sequence_end       bool -> sequence_end
//   priority           int64 >= 0 or uint64 -> priority
//   timeout            int64 >= 0 or uint64 -> timeout_us (microseconds)
//   triton_enable_empty_final_response  bool -> enable_empty_final_response
//   binary_data_output bool; HTTP's output encoding (its codec reads it),
//                      removed here
//   headers            any type; header forwarding's key, removed here
//   other triton_*     refused
//
// Every other key stays in `parameters` as a custom parameter.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>

#include "core/infer_request.h"
#include "core/parameters.h"
#include "core/status.h"

namespace inferd {

// Moves the reserved keys out of `request.parameters` into the typed
// fields. Errors are INVALID_ARGUMENT naming the key, the type it takes and
// the type (and value) given: "parameter 'priority' must be a non-negative
// integer, got string 'high'"; a reserved `triton_*` key is refused with
// "parameter 'triton_x': keys starting with 'triton_' are reserved ...".
// On error the request is left partly applied; it is not served.
Status ApplyReservedParameters(InferRequest& request);

// "bool", "int64", "uint64", "double" or "string".
const char* ParameterTypeName(const ParameterValue& value);

// The type and value, for an error message: "bool true", "int64 -1",
// "string 'yes'" (client text bounded and escaped).
std::string DescribeParameter(const ParameterValue& value);

// The one wording of a mistyped parameter, shared with the repository
// parameters (load/unload): INVALID_ARGUMENT
// "<what> '<key>' must be <expected>, got <DescribeParameter(given)>".
Status ParameterTypeError(std::string_view what, std::string_view key, std::string_view expected,
                          const ParameterValue& given);

}  // namespace inferd
