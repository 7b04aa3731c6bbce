// add_sub: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
// The arithmetic of the models that Triton's standard client examples call
// (simple, simple_int8, simple_string).
#include <charconv>
#include <cstring>

#include "backend/builtin/builtin_backends.h"
#include "core/bytes_tensor.h"

namespace inferd {
namespace {

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

StatusOr<int64_t> ParseDecimal(std::string_view s, const char* which) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return InvalidArgument(std::string("add_sub: element of ") + which +
                           " is not a decimal integer");
  }
  return v;
}

Status AddSubBytes(const InferInput& a, const InferInput& b, InferResponse& resp) {
  auto ea = SplitBytesElements(a.data.data, a.data.byte_size);
  if (!ea.ok()) return ea.status();
  auto eb = SplitBytesElements(b.data.data, b.data.byte_size);
  if (!eb.ok()) return eb.status();
  std::string sum, diff;
  for (size_t i = 0; i < ea->size(); ++i) {
    auto x = ParseDecimal((*ea)[i], "INPUT0");
    if (!x.ok()) return x.status();
    auto y = ParseDecimal((*eb)[i], "INPUT1");
    if (!y.ok()) return y.status();
    const auto ux = static_cast<uint64_t>(*x), uy = static_cast<uint64_t>(*y);
    AppendBytesElement(sum, std::to_string(static_cast<int64_t>(ux + uy)));
    AppendBytesElement(diff, std::to_string(static_cast<int64_t>(ux - uy)));
  }
  auto& o0 = resp.AddOutput("OUTPUT0", DataType::kBytes, a.shape, sum.size());
  std::memcpy(o0.buffer.data(), sum.data(), sum.size());
  auto& o1 = resp.AddOutput("OUTPUT1", DataType::kBytes, a.shape, diff.size());
  std::memcpy(o1.buffer.data(), diff.data(), diff.size());
  return Status::Ok();
}

Status AddSubOne(DataType type, const InferRequest& req, InferResponse& resp) {
  const InferInput* a = req.FindInput("INPUT0");
  const InferInput* b = req.FindInput("INPUT1");
  if (a == nullptr || b == nullptr) return InvalidArgument("add_sub needs INPUT0 and INPUT1");
  if (a->shape != b->shape) {
    return InvalidArgument("add_sub: INPUT0 shape " + ShapeToString(a->shape) +
                           " differs from INPUT1 shape " + ShapeToString(b->shape));
  }
  if (type == DataType::kBytes) return AddSubBytes(*a, *b, resp);
  const size_t bytes = a->data.byte_size;
  const size_t n = bytes / DataTypeByteSize(type);
  auto& o0 = resp.AddOutput("OUTPUT0", type, a->shape, bytes);
  auto& o1 = resp.AddOutput("OUTPUT1", type, a->shape, bytes);
  char* s = o0.buffer.data();
  char* d = o1.buffer.data();
  switch (type) {
    case DataType::kInt32:
      AddSubTyped<int32_t>(a->data.data, b->data.data, s, d, n);
      break;
    case DataType::kInt8:
      AddSubTyped<int8_t>(a->data.data, b->data.data, s, d, n);
      break;
    case DataType::kFp32:
      AddSubTyped<float>(a->data.data, b->data.data, s, d, n);
      break;
    default:
      return Internal("add_sub: unsupported datatype");
  }
  return Status::Ok();
}

class AddSubInstance : public BackendInstance {
 public:
  explicit AddSubInstance(DataType type) : type_(type) {}
  void Execute(std::span<ExecutionItem> batch) override {
    for (auto& item : batch) item.status = AddSubOne(type_, *item.request, *item.response);
  }

 private:
  DataType type_;
};

class AddSubModel : public BackendModel {
 public:
  explicit AddSubModel(DataType type) : type_(type) {}
  StatusOr<std::unique_ptr<BackendInstance>> CreateInstance(const InstanceInfo&) override {
    return std::unique_ptr<BackendInstance>(new AddSubInstance(type_));
  }

 private:
  DataType type_;
};

class AddSubBackend : public Backend {
 public:
  StatusOr<std::unique_ptr<BackendModel>> LoadModel(const ModelLoadContext& ctx) override {
    const ModelSpec& s = *ctx.spec;
    const TensorSpec* in0 = s.FindInput("INPUT0");
    const TensorSpec* in1 = s.FindInput("INPUT1");
    if (!in0 || !in1 || !s.FindOutput("OUTPUT0") || !s.FindOutput("OUTPUT1") ||
        s.inputs.size() != 2 || s.outputs.size() != 2) {
      return InvalidArgument(
          "add_sub model needs exactly inputs INPUT0, INPUT1 and outputs OUTPUT0, OUTPUT1");
    }
    const DataType t = in0->datatype;
    if (t != DataType::kInt32 && t != DataType::kFp32 && t != DataType::kInt8 &&
        t != DataType::kBytes) {
      return InvalidArgument(
          "add_sub supports TYPE_INT32, TYPE_FP32, TYPE_INT8 and TYPE_STRING, "
          "not " +
          std::string(DataTypeToConfigName(t)));
    }
    for (const auto& ts : {*in1, *s.FindOutput("OUTPUT0"), *s.FindOutput("OUTPUT1")}) {
      if (ts.datatype != t) {
        return InvalidArgument("add_sub: '" + ts.name + "' must have the datatype of INPUT0 (" +
                               std::string(DataTypeToConfigName(t)) + ")");
      }
    }
    if (in0->dims != in1->dims) {
      return InvalidArgument("add_sub: INPUT0 and INPUT1 must have the same dims");
    }
    return std::unique_ptr<BackendModel>(new AddSubModel(t));
  }
};

}  // namespace

std::shared_ptr<Backend> MakeAddSubBackend() { return std::make_shared<AddSubBackend>(); }

}  // namespace inferd
