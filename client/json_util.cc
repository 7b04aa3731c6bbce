#include "json_util.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cmath>
#include <cstring>

#include "inferd/client/tensor.h"

namespace inferd::client {
namespace detail {
namespace {

template <typename T>
void Append(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// IEEE half from a float (round to nearest even, no NaN payloads).
uint16_t ToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return uint16_t(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    const uint32_t shift = uint32_t(14 - exp);
    uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (h & 1))) ++h;
  return uint16_t(h);
}

float FromHalf(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = std::ldexp(float(mant), -24);
  } else if (exp == 31) {
    f = mant ? NAN : INFINITY;
  } else {
    f = std::ldexp(float(mant | 0x400), int(exp) - 25);
  }
  return sign ? -f : f;
}

bool AppendOne(const rapidjson::Value& v, const std::string& dt, std::string& out) {
  if (dt == "BYTES") {
    if (!v.IsString()) return false;
    const uint32_t len = v.GetStringLength();
    Append(out, len);
    out.append(v.GetString(), len);
    return true;
  }
  if (dt == "BOOL") {
    if (!v.IsBool()) return false;
    Append<uint8_t>(out, v.GetBool());
    return true;
  }
  if (!v.IsNumber()) return false;
  const bool is_int = dt[0] == 'I' || dt[0] == 'U';
  if (is_int && !(v.IsInt64() || v.IsUint64())) return false;
  if (dt == "INT8")
    Append<int8_t>(out, int8_t(v.GetInt64()));
  else if (dt == "INT16")
    Append<int16_t>(out, int16_t(v.GetInt64()));
  else if (dt == "INT32")
    Append<int32_t>(out, int32_t(v.GetInt64()));
  else if (dt == "INT64")
    Append<int64_t>(out, v.GetInt64());
  else if (dt == "UINT8")
    Append<uint8_t>(out, uint8_t(v.GetUint64()));
  else if (dt == "UINT16")
    Append<uint16_t>(out, uint16_t(v.GetUint64()));
  else if (dt == "UINT32")
    Append<uint32_t>(out, uint32_t(v.GetUint64()));
  else if (dt == "UINT64")
    Append<uint64_t>(out, v.GetUint64());
  else if (dt == "FP32")
    Append<float>(out, float(v.GetDouble()));
  else if (dt == "FP64")
    Append<double>(out, v.GetDouble());
  else if (dt == "FP16")
    Append<uint16_t>(out, ToHalf(float(v.GetDouble())));
  else if (dt == "BF16") {
    const float f = float(v.GetDouble());
    uint32_t x;
    std::memcpy(&x, &f, 4);
    Append<uint16_t>(out, uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16));
  } else {
    return false;
  }
  return true;
}

// The shortest text that reads back as the same float (0.1f prints as
// 0.1, not 0.10000000149011612). FP64 keeps rapidjson's shortest double.
void WriteFloat(rapidjson::Writer<rapidjson::StringBuffer>& w, float f) {
  if (!std::isfinite(f)) {
    // Not JSON numbers; written the way Python's json module reads them.
    const char* t = std::isnan(f) ? "NaN" : f > 0 ? "Infinity" : "-Infinity";
    w.RawValue(t, std::strlen(t), rapidjson::kNumberType);
    return;
  }
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, f);
  std::string text(buf, res.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  w.RawValue(text.c_str(), text.size(), rapidjson::kNumberType);
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

bool JsonDataToBytes(const rapidjson::Value& data, const std::string& datatype, std::string& out) {
  if (data.IsArray()) {
    for (const auto& v : data.GetArray())
      if (!JsonDataToBytes(v, datatype, out)) return false;
    return true;
  }
  return AppendOne(data, datatype, out);
}

}  // namespace detail

ClientStatus SetDataFromJson(Tensor& t, std::string_view json_array) {
  rapidjson::Document d;
  d.Parse(json_array.data(), json_array.size());
  if (d.HasParseError())
    return ClientStatus::Error("input " + t.name + ": the values are not JSON");
  if (t.datatype != "BYTES" && ElementSize(t.datatype) == 0)
    return ClientStatus::Error("input " + t.name + ": unknown datatype '" + t.datatype + "'");
  std::string bytes;
  if (!detail::JsonDataToBytes(d, t.datatype, bytes))
    return ClientStatus::Error("input " + t.name + ": a value is not a " + t.datatype);
  const int64_t want = t.ElementCount();
  int64_t have = 0;
  if (t.datatype == "BYTES") {
    t.data = bytes;
    auto s = t.ToStrings();
    have = s ? int64_t(s->size()) : -1;
  } else {
    have = int64_t(bytes.size() / ElementSize(t.datatype));
  }
  if (have != want) {
    return ClientStatus::Error("input " + t.name + ": " + std::to_string(have) +
                               " values for a shape of " + std::to_string(want) + " elements");
  }
  t.data = std::move(bytes);
  return {};
}

std::string DataToJson(const Tensor& t) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartArray();
  const std::string& dt = t.datatype;
  if (dt == "BYTES") {
    if (auto s = t.ToStrings())
      for (const auto& e : *s) w.String(e.data(), rapidjson::SizeType(e.size()));
  } else {
    const size_t es = ElementSize(dt);
    for (size_t i = 0; es && i + es <= t.data.size(); i += es) {
      const char* p = t.data.data() + i;
      if (dt == "BOOL")
        w.Bool(p[0] != 0);
      else if (dt == "INT8")
        w.Int(detail::Load<int8_t>(p));
      else if (dt == "INT16")
        w.Int(detail::Load<int16_t>(p));
      else if (dt == "INT32")
        w.Int(detail::Load<int32_t>(p));
      else if (dt == "INT64")
        w.Int64(detail::Load<int64_t>(p));
      else if (dt == "UINT8")
        w.Uint(detail::Load<uint8_t>(p));
      else if (dt == "UINT16")
        w.Uint(detail::Load<uint16_t>(p));
      else if (dt == "UINT32")
        w.Uint(detail::Load<uint32_t>(p));
      else if (dt == "UINT64")
        w.Uint64(detail::Load<uint64_t>(p));
      else if (dt == "FP32")
        detail::WriteFloat(w, detail::Load<float>(p));
      else if (dt == "FP64")
        w.Double(detail::Load<double>(p));
      else if (dt == "FP16")
        detail::WriteFloat(w, detail::FromHalf(detail::Load<uint16_t>(p)));
      else if (dt == "BF16") {
        const uint32_t x = uint32_t(detail::Load<uint16_t>(p)) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        detail::WriteFloat(w, f);
      }
    }
  }
  w.EndArray();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace inferd::client
