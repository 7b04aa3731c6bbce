// add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
// The arithmetic of the models that Triton's standard client examples call
// (simple, simple_int8, simple_string). A built-in plugin on the C ABI.
#include <charconv>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "backend/builtin/builtin_backends.h"
#include "common/backend_util.h"

namespace inferd {
namespace {

using namespace inferd_backend;

template <typename T>
void AddSubTyped(const char* a, const char* b, char* sum, char* diff, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, a + i * sizeof(T), sizeof(T));
    std::memcpy(&y, b + i * sizeof(T), sizeof(T));
    // Integer overflow wraps (computed in the unsigned domain), as in Triton's examples.
    T s, d;
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      s = static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
      d = static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
    } else {
      s = x + y;
      d = x - y;
    }
    std::memcpy(sum + i * sizeof(T), &s, sizeof(T));
    std::memcpy(diff + i * sizeof(T), &d, sizeof(T));
  }
}

// The elements of a serialised BYTES tensor (4-byte little-endian lengths).
std::vector<std::string_view> BytesElements(const InferdTensor& t) {
  std::vector<std::string_view> out;
  const char* p = static_cast<const char*>(t.buffer);
  size_t off = 0;
  while (off < t.byte_size) {
    if (t.byte_size - off < 4) ThrowInvalidArgument("add_sub: truncated BYTES element");
    uint32_t n;
    std::memcpy(&n, p + off, 4);
    off += 4;
    if (t.byte_size - off < n) ThrowInvalidArgument("add_sub: BYTES element runs past the end");
    out.emplace_back(p + off, n);
    off += n;
  }
  return out;
}

void AppendElement(std::string& out, const std::string& e) {
  const uint32_t n = static_cast<uint32_t>(e.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  out += e;
}

int64_t ParseDecimal(std::string_view s, const char* which) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    ThrowInvalidArgument(std::string("add_sub: element of ") + which + " is not a decimal integer");
  }
  return v;
}

std::vector<int64_t> ShapeOf(const InferdTensor& t) {
  return std::vector<int64_t>(t.shape, t.shape + t.dims_count);
}

void AddSubBytes(const Request& r, const InferdTensor& a, const InferdTensor& b) {
  auto ea = BytesElements(a);
  auto eb = BytesElements(b);
  if (ea.size() != eb.size()) ThrowInvalidArgument("add_sub: INPUT0 and INPUT1 differ in length");
  std::string sum, diff;
  for (size_t i = 0; i < ea.size(); ++i) {
    const auto x = static_cast<uint64_t>(ParseDecimal(ea[i], "INPUT0"));
    const auto y = static_cast<uint64_t>(ParseDecimal(eb[i], "INPUT1"));
    AppendElement(sum, std::to_string(static_cast<int64_t>(x + y)));
    AppendElement(diff, std::to_string(static_cast<int64_t>(x - y)));
  }
  const auto shape = ShapeOf(a);
  std::memcpy(r.AllocateOutput("OUTPUT0", INFERD_TYPE_BYTES, shape, sum.size()), sum.data(),
              sum.size());
  std::memcpy(r.AllocateOutput("OUTPUT1", INFERD_TYPE_BYTES, shape, diff.size()), diff.data(),
              diff.size());
}

struct AddSubModel {
  InferdDataType type = INFERD_TYPE_INVALID;

  explicit AddSubModel(const InferdModelInfo& info) {
    auto find = [](const InferdTensorSpec* ts, uint32_t n, const char* name) {
      for (uint32_t i = 0; i < n; ++i) {
        if (std::strcmp(ts[i].name, name) == 0) return &ts[i];
      }
      return static_cast<const InferdTensorSpec*>(nullptr);
    };
    const auto* in0 = find(info.inputs, info.input_count, "INPUT0");
    const auto* in1 = find(info.inputs, info.input_count, "INPUT1");
    const auto* out0 = find(info.outputs, info.output_count, "OUTPUT0");
    const auto* out1 = find(info.outputs, info.output_count, "OUTPUT1");
    if (!in0 || !in1 || !out0 || !out1 || info.input_count != 2 || info.output_count != 2) {
      ThrowInvalidArgument(
          "add_sub model needs exactly inputs INPUT0, INPUT1 and outputs OUTPUT0, OUTPUT1");
    }
    type = in0->datatype;
    if (type != INFERD_TYPE_INT32 && type != INFERD_TYPE_FP32 && type != INFERD_TYPE_INT8 &&
        type != INFERD_TYPE_BYTES) {
      ThrowInvalidArgument(
          std::string("add_sub supports TYPE_INT32, TYPE_FP32, TYPE_INT8 and "
                      "TYPE_STRING, not ") +
          (type == INFERD_TYPE_BYTES ? "TYPE_STRING" : std::string("TYPE_") + TypeName(type)));
    }
    for (const auto* ts : {in1, out0, out1}) {
      if (ts->datatype != type) {
        ThrowInvalidArgument(
            std::string("add_sub: '") + ts->name + "' must have the datatype of INPUT0 (" +
            (type == INFERD_TYPE_BYTES ? "TYPE_STRING" : std::string("TYPE_") + TypeName(type)) +
            ")");
      }
    }
    if (ShapeString(in0->dims, in0->dims_count) != ShapeString(in1->dims, in1->dims_count)) {
      ThrowInvalidArgument("add_sub: INPUT0 and INPUT1 must have the same dims");
    }
  }
};

struct AddSubInstance {
  InferdDataType type;

  AddSubInstance(AddSubModel& model, const InferdInstanceInfo&) : type(model.type) {}

  void Execute(InferdRequest* const* requests, uint32_t n) {
    ForEachRequest(requests, n, [&](const Request& r) { One(r); });
  }

  void One(const Request& r) const {
    InferdTensor a{}, b{};
    if (!r.FindInput("INPUT0", &a) || !r.FindInput("INPUT1", &b)) {
      ThrowInvalidArgument("add_sub needs INPUT0 and INPUT1");
    }
    const auto shape = ShapeOf(a);
    if (shape != ShapeOf(b)) {
      ThrowInvalidArgument("add_sub: INPUT0 shape " + ShapeString(shape) +
                           " differs from INPUT1 shape " + ShapeString(ShapeOf(b)));
    }
    if (type == INFERD_TYPE_BYTES) return AddSubBytes(r, a, b);
    const size_t bytes = a.byte_size;
    char* s = static_cast<char*>(r.AllocateOutput("OUTPUT0", type, shape, bytes));
    char* d = static_cast<char*>(r.AllocateOutput("OUTPUT1", type, shape, bytes));
    const char* x = static_cast<const char*>(a.buffer);
    const char* y = static_cast<const char*>(b.buffer);
    switch (type) {
      case INFERD_TYPE_INT32:
        return AddSubTyped<int32_t>(x, y, s, d, bytes / 4);
      case INFERD_TYPE_INT8:
        return AddSubTyped<int8_t>(x, y, s, d, bytes);
      default:
        return AddSubTyped<float>(x, y, s, d, bytes / 4);
    }
  }
};

}  // namespace

const InferdBackendApi* AddSubBackendEntry(uint32_t) {
  return &BackendTable<AddSubModel, AddSubInstance>::kApi;
}

}  // namespace inferd
