#include "core/datatype.h"

#include <array>

namespace inferd {
namespace {

struct TypeInfo {
  DataType type;
  std::string_view protocol;
  std::string_view config;
  size_t size;
};

constexpr std::array<TypeInfo, 15> kTypes = {{
    {DataType::kInvalid, "INVALID", "TYPE_INVALID", 0},
    {DataType::kBool, "BOOL", "TYPE_BOOL", 1},
    {DataType::kUint8, "UINT8", "TYPE_UINT8", 1},
    {DataType::kUint16, "UINT16", "TYPE_UINT16", 2},
    {DataType::kUint32, "UINT32", "TYPE_UINT32", 4},
    {DataType::kUint64, "UINT64", "TYPE_UINT64", 8},
    {DataType::kInt8, "INT8", "TYPE_INT8", 1},
    {DataType::kInt16, "INT16", "TYPE_INT16", 2},
    {DataType::kInt32, "INT32", "TYPE_INT32", 4},
    {DataType::kInt64, "INT64", "TYPE_INT64", 8},
    {DataType::kFp16, "FP16", "TYPE_FP16", 2},
    {DataType::kFp32, "FP32", "TYPE_FP32", 4},
    {DataType::kFp64, "FP64", "TYPE_FP64", 8},
    {DataType::kBytes, "BYTES", "TYPE_STRING", 0},
    {DataType::kBf16, "BF16", "TYPE_BF16", 2},
}};

const TypeInfo& Info(DataType t) {
  const auto i = static_cast<size_t>(t);
  return i < kTypes.size() ? kTypes[i] : kTypes[0];
}

}  // namespace

std::string_view DataTypeToProtocol(DataType t) { return Info(t).protocol; }
std::string_view DataTypeToConfigName(DataType t) { return Info(t).config; }
size_t DataTypeByteSize(DataType t) { return Info(t).size; }

DataType DataTypeFromProtocol(std::string_view s) {
  for (size_t i = 1; i < kTypes.size(); ++i) {
    if (kTypes[i].protocol == s) return kTypes[i].type;
  }
  return DataType::kInvalid;
}

}  // namespace inferd
