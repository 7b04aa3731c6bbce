// Request/response parameters: the typed values the protocols carry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>

namespace inferd {

using ParameterValue = std::variant<bool, int64_t, uint64_t, double, std::string>;
using Parameters = std::map<std::string, ParameterValue>;

}  // namespace inferd
