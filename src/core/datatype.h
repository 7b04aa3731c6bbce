// DataType: tensor element types, numbered as model_config.proto's DataType
// so the config enum converts by value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace inferd {

enum class DataType : int {
  kInvalid = 0,
  kBool = 1,
  kUint8 = 2,
  kUint16 = 3,
  kUint32 = 4,
  kUint64 = 5,
  kInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kFp16 = 10,
  kFp32 = 11,
  kFp64 = 12,
  kBytes = 13,  // TYPE_STRING in the config, "BYTES" on the wire
  kBf16 = 14,
};

// Protocol string ("FP32", "BYTES", ...) of a type; "INVALID" for kInvalid.
std::string_view DataTypeToProtocol(DataType t);

// Exact, case-sensitive parse of a protocol string; kInvalid if unknown.
DataType DataTypeFromProtocol(std::string_view s);

// Config enum name ("TYPE_FP32", "TYPE_STRING", ...).
std::string_view DataTypeToConfigName(DataType t);

// Bytes per element; 0 for BYTES (variable) and kInvalid.
size_t DataTypeByteSize(DataType t);

}  // namespace inferd
