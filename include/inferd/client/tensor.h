// inferd::client tensors, requests and results, shared by the HTTP and gRPC
// clients of libinferclient, with typed helpers to fill inputs from
// std::vector and read outputs as typed views.
//
// Ownership: a Tensor owns its bytes (a std::string). Views returned by
// AsSpan borrow from the Tensor and live as long as it is not modified.
// Threading: plain values, no shared state. Errors: the helpers return a
// ClientStatus (or an empty optional), never throw.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferd::client {

struct ClientStatus {
  bool ok = true;
  std::string message;
  // True when no answer came from the server (cannot connect, connection
  // lost, gRPC UNAVAILABLE/DEADLINE_EXCEEDED), as opposed to an error answer.
  bool unreachable = false;
  static ClientStatus Error(std::string m) { return {false, std::move(m), false}; }
  static ClientStatus Unreachable(std::string m) { return {false, std::move(m), true}; }
};

// The protocol name of a C++ element type ("FP32" for float, ...).
template <typename T>
constexpr const char* DataTypeOf();
template <>
constexpr const char* DataTypeOf<bool>() {
  return "BOOL";
}
template <>
constexpr const char* DataTypeOf<uint8_t>() {
  return "UINT8";
}
template <>
constexpr const char* DataTypeOf<uint16_t>() {
  return "UINT16";
}
template <>
constexpr const char* DataTypeOf<uint32_t>() {
  return "UINT32";
}
template <>
constexpr const char* DataTypeOf<uint64_t>() {
  return "UINT64";
}
template <>
constexpr const char* DataTypeOf<int8_t>() {
  return "INT8";
}
template <>
constexpr const char* DataTypeOf<int16_t>() {
  return "INT16";
}
template <>
constexpr const char* DataTypeOf<int32_t>() {
  return "INT32";
}
template <>
constexpr const char* DataTypeOf<int64_t>() {
  return "INT64";
}
template <>
constexpr const char* DataTypeOf<float>() {
  return "FP32";
}
template <>
constexpr const char* DataTypeOf<double>() {
  return "FP64";
}

// Bytes per element of a protocol datatype; 0 for BYTES and unknown names.
size_t ElementSize(std::string_view datatype);

// A tensor in binary form: little-endian, row-major; BYTES elements each
// prefixed by a 4-byte little-endian length. An input may instead point into
// a registered shared-memory region (then `data` is empty).
struct Tensor {
  std::string name;
  std::string datatype;  // "FP32", "INT32", "BYTES", ...
  std::vector<int64_t> shape;
  std::string data;
  std::string shm_region;  // non-empty: the data lives in this region
  size_t shm_offset = 0;
  size_t shm_byte_size = 0;

  int64_t ElementCount() const;

  // Sets datatype and data from typed values (the shape is kept as given).
  template <typename T>
  Tensor& Set(const std::vector<T>& values) {
    datatype = DataTypeOf<T>();
    data.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
    return *this;
  }
  Tensor& SetStrings(const std::vector<std::string>& values);  // BYTES

  // A typed view of the data; empty optional when the datatype is not T's or
  // the size is not a whole number of elements.
  template <typename T>
  std::optional<std::span<const T>> AsSpan() const {
    if (datatype != DataTypeOf<T>() || data.size() % sizeof(T) != 0) return std::nullopt;
    // std::string storage is at least 8-byte aligned (heap or in-object).
    if (reinterpret_cast<uintptr_t>(data.data()) % alignof(T) != 0) return std::nullopt;
    return std::span<const T>(reinterpret_cast<const T*>(data.data()), data.size() / sizeof(T));
  }
  // A typed copy of the data; empty optional on a datatype mismatch.
  template <typename T>
  std::optional<std::vector<T>> ToVector() const {
    if (datatype != DataTypeOf<T>() || data.size() % sizeof(T) != 0) return std::nullopt;
    std::vector<T> v(data.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), data.data(), data.size());
    return v;
  }
  // The elements of a BYTES tensor; empty optional when malformed.
  std::optional<std::vector<std::string>> ToStrings() const;
};

// Fills `t.data` from a JSON array of values (nested arrays are flattened,
// BYTES elements are strings) according to `t.datatype`; the element count
// must match `t.shape`. An error names the problem.
ClientStatus SetDataFromJson(Tensor& t, std::string_view json_array);
// The tensor's values as a flat JSON array (BYTES elements as strings,
// their bytes copied as they are; floats in their shortest exact form; NaN
// and infinities as NaN/Infinity/-Infinity, which strict JSON lacks).
std::string DataToJson(const Tensor& t);

// Builds an input tensor from typed values.
template <typename T>
Tensor MakeTensor(std::string name, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.Set(values);
  return t;
}
Tensor MakeBytesTensor(std::string name, std::vector<int64_t> shape,
                       const std::vector<std::string>& values);

// An output the caller asks for; empty list in InferRequest means all.
struct RequestedOutput {
  RequestedOutput() = default;
  RequestedOutput(std::string n, int64_t classes = 0) : name(std::move(n)), class_count(classes) {}
  std::string name;
  int64_t class_count = 0;  // > 0: classification labels instead of values
  std::string shm_region;   // non-empty: the server writes the output there
  size_t shm_offset = 0;
  size_t shm_byte_size = 0;
};

struct InferRequest {
  std::string model;
  std::string version;  // empty: the server's policy
  std::string id;
  std::vector<Tensor> inputs;
  std::vector<RequestedOutput> outputs;
  // Sequence batching: correlation id (0: none) and start/end flags.
  uint64_t sequence_id = 0;
  bool sequence_start = false;
  bool sequence_end = false;
  int64_t priority = 0;
  int64_t timeout_us = 0;  // 0: none
};

struct InferResult {
  // HTTP: the status code; gRPC: the status code (0 is OK).
  int status = 0;
  std::string error;  // the server's message when the request failed
  std::string json;   // HTTP: the response's JSON header; gRPC: empty
  std::string model_name;
  std::string model_version;
  std::string id;
  std::vector<Tensor> outputs;  // in response order

  bool ok() const { return error.empty() && (status == 0 || status == 200); }
  const Tensor* Output(std::string_view name) const {
    for (const auto& t : outputs)
      if (t.name == name) return &t;
    return nullptr;
  }
};

}  // namespace inferd::client
