#include "frontend/http/json_tensor_data.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "core/bytes_tensor.h"
#include "core/sanitize.h"

namespace inferd::http {
namespace {

using rapidjson::Value;

// The smallest magnitude a double rounds up to FP32 infinity from (halfway
// between FLT_MAX and 2^128; the tie rounds to even, which is infinity).
// Below it the value rounds to a finite FP32, at worst FLT_MAX.
constexpr double kFp32Overflow = 0x1.ffffffp+127;

// Client data quoted in an error: bounded and escaped (core/sanitize.h).
std::string Q(std::string_view s) { return "'" + Bounded(s) + "'"; }

// Counts the scalar leaves of a (possibly nested) JSON array.
bool CountLeaves(const Value& v, size_t depth, size_t max_depth, uint64_t& count) {
  if (depth > max_depth) return false;
  if (v.IsArray()) {
    for (const auto& e : v.GetArray()) {
      if (!CountLeaves(e, depth + 1, max_depth, count)) return false;
    }
  } else {
    ++count;
  }
  return true;
}

template <typename Fn>
void ForEachLeaf(const Value& v, Fn& fn) {
  if (v.IsArray()) {
    for (const auto& e : v.GetArray()) ForEachLeaf(e, fn);
  } else {
    fn(v);
  }
}

template <typename T>
void Store(char* out, size_t i, T value) {
  std::memcpy(out + i * sizeof(T), &value, sizeof(T));
}

// Checks JSON `data` against the input's shape (and the nesting limit)
// before anything is allocated for it; returns the element count.
StatusOr<uint64_t> CountJsonData(const Value& data, const InferInput& input,
                                 const DecodeLimits& limits) {
  const std::string& name = input.name;
  if (input.datatype == DataType::kFp16 || input.datatype == DataType::kBf16) {
    return InvalidArgument("receiving " + std::string(DataTypeToProtocol(input.datatype)) +
                           " data via JSON is not supported. Please use the binary data format "
                           "for input " +
                           Q(name));
  }
  auto expected = ElementCount(input.shape);
  if (!expected) {
    return InvalidArgument("input " + Q(name) + ": element count of shape " +
                           ShapeToString(input.shape) + " overflows");
  }
  uint64_t count = 0;
  if (!data.IsArray()) {
    return InvalidArgument("input " + Q(name) + ": 'data' must be an array");
  }
  if (!CountLeaves(data, 0, limits.max_json_depth, count)) {
    return InvalidArgument("input " + Q(name) + ": 'data' is nested deeper than " +
                           std::to_string(limits.max_json_depth) + " levels");
  }
  if (count != static_cast<uint64_t>(*expected)) {
    return InvalidArgument("input " + Q(name) + ": shape " + ShapeToString(input.shape) +
                           " expects " + std::to_string(*expected) + " elements but 'data' has " +
                           std::to_string(count));
  }
  if (input.datatype == DataType::kBytes && count > limits.max_bytes_elements) {
    return InvalidArgument("input " + Q(name) + ": " + std::to_string(count) +
                           " BYTES elements exceed the limit of " +
                           std::to_string(limits.max_bytes_elements) + " (--max-bytes-elements)");
  }
  return count;
}

// BYTES elements (JSON strings), serialised with their length prefixes.
Status DecodeJsonBytes(const Value& data, InferInput& input, InferRequest& request) {
  std::string serialised;
  Status st;
  auto fn = [&](const Value& e) {
    if (!st.ok()) return;
    if (!e.IsString()) {
      st = InvalidArgument("input " + Q(input.name) + ": BYTES elements must be JSON strings");
      return;
    }
    AppendBytesElement(serialised, std::string_view(e.GetString(), e.GetStringLength()));
  };
  ForEachLeaf(data, fn);
  if (!st.ok()) return st;
  char* buf = request.Allocate(serialised.size());
  if (!serialised.empty()) std::memcpy(buf, serialised.data(), serialised.size());
  input.data = BufferView{buf, serialised.size(), MemoryType::kCpu, 0};
  return Status::Ok();
}

// Why an element could not be stored.
enum class Problem {
  kNone,
  kKind,     // not the JSON kind the datatype takes (a string for INT32, 1 for BOOL)
  kInteger,  // a number, in range, but written with a fraction or an exponent
  kOutOfRange,
};

// An integer type: the JSON integer as it was parsed (int64, or uint64
// above INT64_MAX), range-checked. A number RapidJSON kept as a double
// (fraction, exponent, or beyond 64 bits) is out of range when its value
// is, else not an integer as written.
template <typename T>
Problem StoreInteger(const Value& e, char* buf, size_t i) {
  using L = std::numeric_limits<T>;
  if (e.IsInt64()) {
    const int64_t v = e.GetInt64();
    if constexpr (std::is_signed_v<T>) {
      if (v < L::min() || v > L::max()) return Problem::kOutOfRange;
    } else {
      if (v < 0 || static_cast<uint64_t>(v) > L::max()) return Problem::kOutOfRange;
    }
    Store<T>(buf, i, static_cast<T>(v));
    return Problem::kNone;
  }
  if (e.IsUint64()) {  // above INT64_MAX: only UINT64 holds it
    const uint64_t u = e.GetUint64();
    if (u > static_cast<uint64_t>(L::max())) return Problem::kOutOfRange;
    Store<T>(buf, i, static_cast<T>(u));
    return Problem::kNone;
  }
  if (!e.IsNumber()) return Problem::kKind;
  const double d = e.GetDouble();
  if (std::isnan(d)) return Problem::kKind;
  // [min, max + 1): both ends are powers of two (or 0), exact as doubles
  // (max + 1 is 2^digits, digits counting the bits without the sign).
  const auto lo = static_cast<double>(L::min());
  const double hi = std::ldexp(1.0, L::digits);
  // An INT64 token below INT64_MIN rounds to exactly -2^63 as a double: out
  // of range too (an in-range -2^63 would have parsed as an int64).
  const bool int64_min = std::is_same_v<T, int64_t> && d == lo;
  if (d < lo || d >= hi || int64_min) return Problem::kOutOfRange;
  return Problem::kInteger;
}

// The strings responses carry non-finite values as (and the parser's
// NaN/Infinity literals, which arrive as numbers).
bool NonFiniteFromString(const Value& e, double& out) {
  if (!e.IsString()) return false;
  const std::string_view s(e.GetString(), e.GetStringLength());
  if (s == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
  } else if (s == "Infinity") {
    out = std::numeric_limits<double>::infinity();
  } else if (s == "-Infinity") {
    out = -std::numeric_limits<double>::infinity();
  } else {
    return false;
  }
  return true;
}

Problem StoreFloat(const Value& e, DataType t, char* buf, size_t i) {
  double d = 0;
  if (e.IsNumber()) {
    d = e.GetDouble();
  } else if (!NonFiniteFromString(e, d)) {
    return Problem::kKind;
  }
  if (t == DataType::kFp64) {
    Store<double>(buf, i, d);
    return Problem::kNone;
  }
  if (std::isfinite(d) && std::fabs(d) >= kFp32Overflow) return Problem::kOutOfRange;
  Store<float>(buf, i, static_cast<float>(d));
  return Problem::kNone;
}

// Stores JSON element `e` as element `i` of type `t` in `buf`.
Problem StoreJsonElement(const Value& e, DataType t, char* buf, size_t i) {
  switch (t) {
    case DataType::kBool:
      if (!e.IsBool()) return Problem::kKind;
      Store<uint8_t>(buf, i, e.GetBool() ? 1 : 0);
      return Problem::kNone;
    case DataType::kUint8:
      return StoreInteger<uint8_t>(e, buf, i);
    case DataType::kUint16:
      return StoreInteger<uint16_t>(e, buf, i);
    case DataType::kUint32:
      return StoreInteger<uint32_t>(e, buf, i);
    case DataType::kUint64:
      return StoreInteger<uint64_t>(e, buf, i);
    case DataType::kInt8:
      return StoreInteger<int8_t>(e, buf, i);
    case DataType::kInt16:
      return StoreInteger<int16_t>(e, buf, i);
    case DataType::kInt32:
      return StoreInteger<int32_t>(e, buf, i);
    case DataType::kInt64:
      return StoreInteger<int64_t>(e, buf, i);
    default:  // FP32, FP64 (CountJsonData refused FP16/BF16, BYTES is decoded apart)
      return StoreFloat(e, t, buf, i);
  }
}

template <typename T>
std::string RangeOf() {
  using L = std::numeric_limits<T>;
  return std::to_string(+L::min()) + " to " + std::to_string(+L::max());
}

// The values a datatype takes, for an out-of-range message.
std::string RangeText(DataType t) {
  switch (t) {
    case DataType::kUint8:
      return RangeOf<uint8_t>();
    case DataType::kUint16:
      return RangeOf<uint16_t>();
    case DataType::kUint32:
      return RangeOf<uint32_t>();
    case DataType::kUint64:
      return RangeOf<uint64_t>();
    case DataType::kInt8:
      return RangeOf<int8_t>();
    case DataType::kInt16:
      return RangeOf<int16_t>();
    case DataType::kInt32:
      return RangeOf<int32_t>();
    case DataType::kInt64:
      return RangeOf<int64_t>();
    default:
      return "magnitude at most 3.4028235e38";
  }
}

// What an element of `t` must be, for a wrong-kind message.
const char* KindText(DataType t) {
  switch (t) {
    case DataType::kBool:
      return "true or false";
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return "a non-negative integer";
    case DataType::kFp32:
    case DataType::kFp64:
      return "a number (or \"NaN\", \"Infinity\", \"-Infinity\")";
    default:
      return "an integer";
  }
}

// The element for an error message: JSON text, bounded; a number kept as a
// double in its shortest round-trip form (1e+39, 18446744073709551616.0,
// 2.0), the value the server read.
std::string ElementText(const Value& e) {
  if (e.IsDouble()) {
    const double d = e.GetDouble();
    if (const char* name = NonFiniteName(d)) return name;
    char text[32];
    const auto res = std::to_chars(text, text + sizeof text, d);
    std::string out(text, res.ptr);
    if (out.find_first_of(".e") == std::string::npos) out += ".0";
    return out;
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::UTF8<>,
                    rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>
      w(buf);
  e.Accept(w);
  return Bounded(std::string_view(buf.GetString(), buf.GetSize()));
}

Status ElementError(const InferInput& input, size_t i, const Value& e, Problem p) {
  const std::string dt(DataTypeToProtocol(input.datatype));
  const std::string head =
      "input " + Q(input.name) + ": element " + std::to_string(i) + " (" + ElementText(e) + ")";
  switch (p) {
    case Problem::kOutOfRange:
      return InvalidArgument(head + " is out of range for " + dt + " (" +
                             RangeText(input.datatype) + ")");
    case Problem::kInteger:
      return InvalidArgument(head + " of " + dt +
                             " data must be an integer (written without a fraction or exponent)");
    default:
      return InvalidArgument(head + " of " + dt + " data must be " + KindText(input.datatype));
  }
}

}  // namespace

const char* NonFiniteName(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return nullptr;
}

Status DecodeJsonData(const Value& data, InferInput& input, InferRequest& request,
                      const DecodeLimits& limits) {
  auto count = CountJsonData(data, input, limits);
  if (!count.ok()) return count.status();
  const DataType t = input.datatype;
  if (t == DataType::kBytes) return DecodeJsonBytes(data, input, request);
  const size_t bytes = *count * DataTypeByteSize(t);  // count is bounded by the JSON text size
  char* buf = request.Allocate(bytes);
  size_t i = 0;
  Status st;
  auto fn = [&](const Value& e) {
    if (!st.ok()) return;
    if (Problem p = StoreJsonElement(e, t, buf, i); p != Problem::kNone) {
      st = ElementError(input, i, e, p);
      return;
    }
    ++i;
  };
  ForEachLeaf(data, fn);
  if (!st.ok()) return st;
  input.data = BufferView{buf, bytes, MemoryType::kCpu, 0};
  return Status::Ok();
}

}  // namespace inferd::http
