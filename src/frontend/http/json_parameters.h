// JSON parameter values (a request's or a repository call's "parameters"
// object) into the neutral Parameters types. Only the translation: what a
// key means and which types it takes is decided by the core
// (core/reserved_parameters.h) or the control plane.
//
// Thread-safety: pure functions.
#pragma once

#include <rapidjson/document.h>

#include <string_view>

#include "core/parameters.h"
#include "core/status.h"

namespace inferd::http {

// A JSON string -> string, true/false -> bool, an integer -> int64 (uint64
// above INT64_MAX), any other number -> double. Objects, arrays and null
// are INVALID_ARGUMENT naming `key`.
StatusOr<ParameterValue> JsonParameterValue(std::string_view key, const rapidjson::Value& value);

// Every member of the object `params` translated into `out`; `where` names
// the object in errors ("request 'parameters'"). Members named `skip` are
// left out (empty: none).
Status DecodeJsonParameters(const rapidjson::Value& params, std::string_view where, Parameters& out,
                            std::string_view skip = {});

}  // namespace inferd::http
