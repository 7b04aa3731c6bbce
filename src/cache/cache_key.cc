#include "cache/cache_key.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

namespace inferd {
namespace {

// Version of the layout below; a change of layout changes it, so that keys
// of different layouts can never be equal.
constexpr std::string_view kMagic = "inferd-cache-key-1";

class KeyWriter {
 public:
  explicit KeyWriter(std::string& out) : out_(out) {}
  template <typename T>
  void Fixed(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  // Length first, so that no two sequences of fields serialise alike.
  void Bytes(std::string_view s) {
    Fixed<uint64_t>(s.size());
    out_.append(s);
  }

 private:
  std::string& out_;
};

void WriteParameter(KeyWriter& w, const ParameterValue& v) {
  w.Fixed<uint8_t>(static_cast<uint8_t>(v.index()));
  std::visit(
      [&w](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          w.Bytes(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          w.Fixed<uint8_t>(x ? 1 : 0);
        } else {
          w.Fixed<T>(x);
        }
      },
      v);
}

size_t ReserveSize(std::string_view model, const InferRequest& r) {
  size_t n = kMagic.size() + model.size() + 64;
  for (const auto& in : r.inputs)
    n += in.name.size() + in.data.byte_size + 8 * in.shape.size() + 40;
  for (const auto& out : r.outputs) n += out.name.size() + 16;
  return n;
}

}  // namespace

StatusOr<CacheKey> BuildCacheKey(std::string_view model, int64_t version,
                                 const InferRequest& request) {
  std::vector<const InferInput*> inputs;
  inputs.reserve(request.inputs.size());
  for (const auto& in : request.inputs) {
    if (in.data.byte_size > 0 && in.data.memory_type == MemoryType::kGpu) {
      return Status(StatusCode::kFailedPrecondition,
                    "input '" + in.name + "' is in GPU memory; only CPU inputs are cached");
    }
    inputs.push_back(&in);
  }
  // Input order does not change what the model computes; names are unique
  // (validated), so sorting gives one order.
  std::sort(inputs.begin(), inputs.end(),
            [](const InferInput* a, const InferInput* b) { return a->name < b->name; });
  CacheKey key;
  key.bytes.reserve(ReserveSize(model, request));
  KeyWriter w(key.bytes);
  w.Bytes(kMagic);
  w.Bytes(model);
  w.Fixed<int64_t>(version);
  w.Fixed<uint64_t>(inputs.size());
  for (const InferInput* in : inputs) {
    w.Bytes(in->name);
    w.Fixed<int32_t>(static_cast<int32_t>(in->datatype));
    w.Fixed<uint64_t>(in->shape.size());
    for (int64_t d : in->shape) w.Fixed<int64_t>(d);
    w.Bytes(std::string_view(in->data.data, in->data.byte_size));
  }
  // Requested outputs keep their order: it is the order of the response.
  w.Fixed<uint64_t>(request.outputs.size());
  for (const auto& out : request.outputs) {
    w.Bytes(out.name);
    w.Fixed<uint32_t>(out.classification);
  }
  w.Fixed<uint64_t>(request.parameters.size());
  for (const auto& [name, value] : request.parameters) {  // a map: sorted
    w.Bytes(name);
    WriteParameter(w, value);
  }
  key.hash = std::hash<std::string_view>{}(key.bytes);
  return key;
}

}  // namespace inferd
