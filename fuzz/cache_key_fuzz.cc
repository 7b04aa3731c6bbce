// libFuzzer target: the response cache's key builder (src/cache/cache_key.h).
// Two requests are decoded from the input; their keys must be equal exactly
// when the requests are the same computation (same model, version, inputs
// as a set by name with datatype, shape and bytes, requested outputs in
// order, custom parameters): a false hit would answer one request with
// another's response. The key must also be deterministic.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "cache/cache_key.h"

namespace {

using namespace inferd;

struct Decoded {
  std::string model;
  int64_t version = 0;
  std::unique_ptr<InferRequest> request = std::make_unique<InferRequest>();
};

// Few distinct short names and values, so that the two requests often
// agree in part and collisions of near-equal requests get exercised.
std::string SmallString(FuzzedDataProvider& in) { return in.ConsumeRandomLengthString(4); }

Decoded Decode(FuzzedDataProvider& in) {
  Decoded d;
  d.model = SmallString(in);
  d.version = in.ConsumeIntegralInRange<int64_t>(-1, 3);
  InferRequest& r = *d.request;
  const int inputs = in.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < inputs; ++i) {
    InferInput x;
    x.name = SmallString(in);
    // Names are unique in a validated request.
    if (std::any_of(r.inputs.begin(), r.inputs.end(),
                    [&x](const InferInput& o) { return o.name == x.name; })) {
      continue;
    }
    x.datatype = static_cast<DataType>(in.ConsumeIntegralInRange(0, 3));
    const int rank = in.ConsumeIntegralInRange(0, 2);
    for (int k = 0; k < rank; ++k) x.shape.push_back(in.ConsumeIntegralInRange<int64_t>(-1, 3));
    // Mostly short data (copied into the key), sometimes past the inline
    // limit (referenced by it).
    std::string bytes = in.ConsumeRandomLengthString(8);
    if (in.ConsumeBool()) bytes.resize(1030 + bytes.size(), bytes.empty() ? 'x' : bytes[0]);
    char* p = r.Allocate(bytes.size());
    std::copy(bytes.begin(), bytes.end(), p);
    x.data = BufferView{p, bytes.size(), MemoryType::kCpu, 0};
    r.inputs.push_back(std::move(x));
  }
  const int outputs = in.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < outputs; ++i) {
    r.outputs.push_back({SmallString(in), in.ConsumeIntegralInRange<uint32_t>(0, 2)});
  }
  const int params = in.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < params; ++i) {
    const std::string key = SmallString(in);
    switch (in.ConsumeIntegralInRange(0, 4)) {
      case 0:
        r.parameters[key] = in.ConsumeBool();
        break;
      case 1:
        r.parameters[key] = in.ConsumeIntegralInRange<int64_t>(0, 2);
        break;
      case 2:
        r.parameters[key] = in.ConsumeIntegralInRange<uint64_t>(0, 2);
        break;
      case 3:
        r.parameters[key] = static_cast<double>(in.ConsumeIntegralInRange(0, 2));
        break;
      default:
        r.parameters[key] = SmallString(in);
    }
  }
  return d;
}

// The request as a comparable value, inputs sorted by name.
auto Canonical(const Decoded& d) {
  std::vector<std::tuple<std::string, int, Shape, std::string>> inputs;
  for (const auto& x : d.request->inputs) {
    inputs.emplace_back(x.name, static_cast<int>(x.datatype), x.shape,
                        std::string(x.data.data, x.data.byte_size));
  }
  std::sort(inputs.begin(), inputs.end());
  std::vector<std::pair<std::string, uint32_t>> outputs;
  for (const auto& o : d.request->outputs) outputs.emplace_back(o.name, o.classification);
  return std::make_tuple(d.model, d.version, inputs, outputs, d.request->parameters);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Decoded a = Decode(in);
  Decoded b = Decode(in);
  auto ka = BuildCacheKey(a.model, a.version, *a.request);
  auto kb = BuildCacheKey(b.model, b.version, *b.request);
  if (!ka.ok() || !kb.ok()) std::abort();  // CPU inputs are always keyed
  auto again = BuildCacheKey(a.model, a.version, *a.request);
  const std::string flat_a = ka->Flatten(), flat_b = kb->Flatten();
  if (again->Flatten() != flat_a || again->hash() != ka->hash()) std::abort();
  if (flat_a.size() != ka->size() || !ka->Equals(flat_a)) std::abort();
  const bool same = Canonical(a) == Canonical(b);
  if (same != (flat_a == flat_b) || same != kb->Equals(flat_a)) std::abort();
  if (same && ka->hash() != kb->hash()) std::abort();
  return 0;
}
