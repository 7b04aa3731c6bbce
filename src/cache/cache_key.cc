#include "cache/cache_key.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <type_traits>

namespace inferd {
namespace {

// Version of the layout below; a change of layout changes it, so that keys
// of different layouts can never be equal.
constexpr std::string_view kMagic = "inferd-cache-key-3";
// Input data up to this size is copied into the key (one allocation for a
// small request); larger data is referenced, so a hit on a large request
// copies nothing but its response.
constexpr size_t kInlineData = 1024;

// A 64-bit hash, 16 bytes per step (the multiply-fold step of wyhash):
// several times faster than std::hash's Murmur on large inputs. It only
// spreads keys over the table; equality is decided by comparing the bytes,
// so its quality affects speed, never correctness.
uint64_t Fold(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

uint64_t Load64(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

constexpr uint64_t kK0 = 0xa0761d6478bd642full, kK1 = 0xe7037ed1a0b428dbull,
                   kK2 = 0x8ebc6af09c88c6e3ull;

// Continues hash `h` over `s`.
uint64_t HashBytes(uint64_t h, std::string_view s) {
  h ^= s.size();
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 16; p += 16, n -= 16) h = Fold(Load64(p) ^ kK1, Load64(p + 8) ^ h);
  char tail[16] = {};
  if (n > 0) std::memcpy(tail, p, n);
  return Fold(Load64(tail) ^ kK2, Load64(tail + 8) ^ h);
}

}  // namespace

// Appends fields to a key's meta bytes, length first for every
// variable-length one, so that no two sequences of fields serialise alike.
class CacheKeyBuilder {
 public:
  CacheKeyBuilder(CacheKey& key, size_t meta_size) : key_(key) { key_.meta_.reserve(meta_size); }
  template <typename T>
  void Fixed(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    key_.meta_.append(b, sizeof(T));
  }
  void Bytes(std::string_view s) {
    Fixed<uint64_t>(s.size());
    key_.meta_.append(s);
  }
  // Input data: copied when small, referenced when large.
  void Data(std::string_view s) {
    Fixed<uint64_t>(s.size());
    if (s.size() <= kInlineData) {
      key_.meta_.append(s);
    } else {
      key_.pieces_.push_back({key_.meta_.size(), s});
    }
  }
  void Parameter(const ParameterValue& v) {
    Fixed<uint8_t>(static_cast<uint8_t>(v.index()));
    std::visit(
        [this](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            Bytes(x);
          } else if constexpr (std::is_same_v<T, bool>) {
            Fixed<uint8_t>(x ? 1 : 0);
          } else {
            Fixed<T>(x);
          }
        },
        v);
  }
  void Finish() {
    uint64_t h = kK0;
    size_t from = 0;
    const std::string_view meta = key_.meta_;
    for (const auto& piece : key_.pieces_) {
      h = HashBytes(h, meta.substr(from, piece.meta_end - from));
      h = HashBytes(h, piece.data);
      from = piece.meta_end;
    }
    key_.hash_ = HashBytes(h, meta.substr(from));
  }

 private:
  CacheKey& key_;
};

size_t CacheKey::size() const {
  size_t n = meta_.size();
  for (const auto& piece : pieces_) n += piece.data.size();
  return n;
}

bool CacheKey::Equals(std::string_view flat) const {
  if (flat.size() != size()) return false;
  const std::string_view meta = meta_;
  size_t from = 0;
  for (const auto& piece : pieces_) {
    const std::string_view part = meta.substr(from, piece.meta_end - from);
    if (flat.substr(0, part.size()) != part) return false;
    flat.remove_prefix(part.size());
    if (flat.substr(0, piece.data.size()) != piece.data) return false;
    flat.remove_prefix(piece.data.size());
    from = piece.meta_end;
  }
  return flat == meta.substr(from);
}

std::string CacheKey::Flatten() const {
  if (pieces_.empty()) return meta_;
  std::string out;
  out.reserve(size());
  const std::string_view meta = meta_;
  size_t from = 0;
  for (const auto& piece : pieces_) {
    out.append(meta.substr(from, piece.meta_end - from));
    out.append(piece.data);
    from = piece.meta_end;
  }
  out.append(meta.substr(from));
  return out;
}

StatusOr<CacheKey> BuildCacheKey(std::string_view model, int64_t version,
                                 const InferRequest& request, uint64_t load_id) {
  // Most requests have a few inputs: no allocation for their order.
  std::array<const InferInput*, 8> fixed{};
  std::vector<const InferInput*> many;
  std::span<const InferInput*> inputs;
  if (request.inputs.size() <= fixed.size()) {
    inputs = std::span(fixed.data(), request.inputs.size());
  } else {
    many.resize(request.inputs.size());
    inputs = std::span(many);
  }
  size_t i = 0;
  size_t meta_size = kMagic.size() + model.size() + 64;
  for (const auto& in : request.inputs) {
    if (in.data.byte_size > 0 && in.data.memory_type == MemoryType::kGpu) {
      return Status(StatusCode::kFailedPrecondition,
                    "input '" + in.name + "' is in GPU memory; only CPU inputs are cached");
    }
    inputs[i++] = &in;
    meta_size += in.name.size() + 8 * in.shape.size() + 40;
    if (in.data.byte_size <= kInlineData) meta_size += in.data.byte_size;
  }
  for (const auto& out : request.outputs) meta_size += out.name.size() + 16;
  // Input order does not change what the model computes; names are unique
  // (validated), so sorting gives one order.
  std::sort(inputs.begin(), inputs.end(),
            [](const InferInput* a, const InferInput* b) { return a->name < b->name; });
  CacheKey key;
  CacheKeyBuilder w(key, meta_size);
  w.Bytes(kMagic);
  w.Bytes(model);
  w.Fixed<int64_t>(version);
  w.Fixed<uint64_t>(load_id);
  w.Fixed<uint64_t>(inputs.size());
  for (const InferInput* in : inputs) {
    w.Bytes(in->name);
    w.Fixed<int32_t>(static_cast<int32_t>(in->datatype));
    w.Fixed<uint64_t>(in->shape.size());
    for (int64_t d : in->shape) w.Fixed<int64_t>(d);
    w.Data(std::string_view(in->data.data, in->data.byte_size));
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
    w.Parameter(value);
  }
  w.Finish();
  return key;
}

}  // namespace inferd
