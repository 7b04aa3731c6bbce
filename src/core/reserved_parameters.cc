#include "core/reserved_parameters.h"

#include <cstdio>
#include <optional>

#include "core/sanitize.h"

namespace inferd {
namespace {

constexpr std::string_view kWhat = "parameter";

Status ApplyBool(std::string_view key, const ParameterValue& v, bool& field) {
  const bool* b = std::get_if<bool>(&v);
  if (b == nullptr) return ParameterTypeError(kWhat, key, "a bool", v);
  field = *b;
  return Status::Ok();
}

// int64 >= 0 or uint64: the unsigned integers both wires can carry.
Status ApplyUnsigned(std::string_view key, const ParameterValue& v, uint64_t& field) {
  if (const uint64_t* u = std::get_if<uint64_t>(&v)) {
    field = *u;
    return Status::Ok();
  }
  const int64_t* i = std::get_if<int64_t>(&v);
  if (i == nullptr || *i < 0) return ParameterTypeError(kWhat, key, "a non-negative integer", v);
  field = static_cast<uint64_t>(*i);
  return Status::Ok();
}

Status ApplySequenceId(std::string_view key, const ParameterValue& v, InferRequest& r) {
  std::optional<uint64_t> id;
  if (const uint64_t* u = std::get_if<uint64_t>(&v)) id = *u;
  // Triton's C++ client sends its uint64 id in int64_param: the bits are the id.
  if (const int64_t* i = std::get_if<int64_t>(&v)) id = static_cast<uint64_t>(*i);
  if (id) {
    if (*id != 0) r.correlation_id = *id;
    return Status::Ok();
  }
  if (const std::string* s = std::get_if<std::string>(&v)) {
    if (!s->empty()) r.correlation_id = *s;
    return Status::Ok();
  }
  return ParameterTypeError(kWhat, key, "an unsigned integer or a string", v);
}

struct ReservedKey {
  std::string_view key;
  Status (*apply)(std::string_view key, const ParameterValue& v, InferRequest& r);
};

const ReservedKey kReserved[] = {
    {"sequence_id", &ApplySequenceId},
    {"sequence_start", [](std::string_view k, const ParameterValue& v,
                          InferRequest& r) { return ApplyBool(k, v, r.sequence_start); }},
    {"sequence_end", [](std::string_view k, const ParameterValue& v,
                        InferRequest& r) { return ApplyBool(k, v, r.sequence_end); }},
    {"priority", [](std::string_view k, const ParameterValue& v,
                    InferRequest& r) { return ApplyUnsigned(k, v, r.priority); }},
    {"timeout", [](std::string_view k, const ParameterValue& v,
                   InferRequest& r) { return ApplyUnsigned(k, v, r.timeout_us); }},
    {"triton_enable_empty_final_response",
     [](std::string_view k, const ParameterValue& v, InferRequest& r) {
       return ApplyBool(k, v, r.enable_empty_final_response);
     }},
    // The HTTP codec has read it for the output encoding; only its type is checked here.
    {"binary_data_output",
     [](std::string_view k, const ParameterValue& v, InferRequest&) {
       bool unused = false;
       return ApplyBool(k, v, unused);
     }},
    {"headers",
     [](std::string_view, const ParameterValue&, InferRequest&) { return Status::Ok(); }},
};

const ReservedKey* FindReserved(std::string_view key) {
  for (const auto& r : kReserved) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

}  // namespace

Status ApplyReservedParameters(InferRequest& request) {
  auto& params = request.parameters;
  for (auto it = params.begin(); it != params.end();) {
    const std::string& key = it->first;
    if (const ReservedKey* r = FindReserved(key)) {
      INFERD_RETURN_IF_ERROR(r->apply(key, it->second, request));
      it = params.erase(it);
    } else if (key.starts_with("triton_")) {
      return InvalidArgument("parameter '" + Bounded(key) +
                             "': keys starting with 'triton_' are reserved for Triton usage and "
                             "should not be specified");
    } else {
      ++it;
    }
  }
  return Status::Ok();
}

const char* ParameterTypeName(const ParameterValue& value) {
  static constexpr const char* kNames[] = {"bool", "int64", "uint64", "double", "string"};
  static_assert(std::variant_size_v<ParameterValue> == std::size(kNames));
  return kNames[value.index()];
}

std::string DescribeParameter(const ParameterValue& value) {
  std::string out = ParameterTypeName(value);
  out += ' ';
  if (const bool* b = std::get_if<bool>(&value)) return out + (*b ? "true" : "false");
  if (const int64_t* i = std::get_if<int64_t>(&value)) return out + std::to_string(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&value)) return out + std::to_string(*u);
  if (const double* d = std::get_if<double>(&value)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return out + buf;
  }
  return out + "'" + Bounded(std::get<std::string>(value)) + "'";
}

Status ParameterTypeError(std::string_view what, std::string_view key, std::string_view expected,
                          const ParameterValue& given) {
  return InvalidArgument(std::string(what) + " '" + Bounded(key) + "' must be " +
                         std::string(expected) + ", got " + DescribeParameter(given));
}

}  // namespace inferd
