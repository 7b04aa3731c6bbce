#include "cache/response_cache.h"

#include <charconv>
#include <cstring>

namespace inferd {
namespace {

// Bookkeeping counted per entry (list node, table slot, response object)
// and per output tensor (name, shape, buffer header): approximate, so that
// many tiny entries cannot exceed the capacity by much.
constexpr uint64_t kEntryOverhead = 256;
constexpr uint64_t kTensorOverhead = 96;

StatusOr<uint64_t> ParseBytes(const std::string& what, const std::string& v) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) {
    return InvalidArgument(what + " expects a number of bytes, got '" + v + "'");
  }
  return n;
}

// One --cache-config value: "<cache>,<key>=<value>". Only the local cache's
// "size" is known.
Status ApplyCacheConfig(const std::string& value, uint64_t& size, bool& sized) {
  const auto comma = value.find(',');
  const std::string cache = value.substr(0, comma);
  if (cache != "local") {
    return InvalidArgument("--cache-config: cache '" + cache +
                           "' is not supported; inferd has only the 'local' (in-process) cache");
  }
  if (comma == std::string::npos) {
    return InvalidArgument("--cache-config expects <cache>,<key>=<value>, got '" + value + "'");
  }
  const std::string setting = value.substr(comma + 1);
  const auto eq = setting.find('=');
  if (eq == std::string::npos) {
    return InvalidArgument("--cache-config expects <cache>,<key>=<value>, got '" + value + "'");
  }
  const std::string key = setting.substr(0, eq);
  if (key != "size") {
    return InvalidArgument("--cache-config: the local cache has no setting '" + key +
                           "' (only size=<bytes>)");
  }
  auto n = ParseBytes("--cache-config local,size", setting.substr(eq + 1));
  if (!n.ok()) return n.status();
  if (*n == 0) return InvalidArgument("--cache-config local,size must be greater than 0");
  size = *n;
  sized = true;
  return Status::Ok();
}

}  // namespace

std::unique_ptr<InferResponse> CloneResponse(const InferResponse& response) {
  auto out = std::make_unique<InferResponse>();
  out->model_name = response.model_name;
  out->model_version = response.model_version;
  out->id = response.id;
  out->parameters = response.parameters;
  out->outputs.reserve(response.outputs.size());
  for (const auto& o : response.outputs) {
    InferOutput& copy = out->AddOutput(o.name, o.datatype, o.shape, o.buffer.size());
    if (o.buffer.size() > 0) std::memcpy(copy.buffer.data(), o.buffer.data(), o.buffer.size());
  }
  return out;
}

std::unique_ptr<InferResponse> ShareResponse(const std::shared_ptr<const InferResponse>& response) {
  auto out = std::make_unique<InferResponse>();
  out->model_name = response->model_name;
  out->model_version = response->model_version;
  out->id = response->id;
  out->parameters = response->parameters;
  out->outputs.reserve(response->outputs.size());
  for (const auto& o : response->outputs) {
    InferOutput& view = out->outputs.emplace_back();
    view.name = o.name;
    view.datatype = o.datatype;
    view.shape = o.shape;
    view.buffer = OwnedBuffer::Shared(response, o.buffer.data(), o.buffer.size());
  }
  return out;
}

ResponseCache::ResponseCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {
  stats_.capacity_bytes = capacity_bytes;
}

uint64_t ResponseCache::EntrySize(const CacheKey& key, const InferResponse& response) {
  uint64_t n = kEntryOverhead + key.size() + response.id.size();
  for (const auto& o : response.outputs) {
    n += kTensorOverhead + o.name.size() + 8 * o.shape.size() + o.buffer.size();
  }
  return n;
}

ResponseCache::Table::iterator ResponseCache::FindLocked(const CacheKey& key) {
  auto [it, end] = table_.equal_range(key.hash());
  for (; it != end; ++it) {
    if (key.Equals(it->second->key)) return it;
  }
  return table_.end();
}

void ResponseCache::EraseLocked(Table::iterator it) {
  stats_.bytes -= it->second->size;
  --stats_.entries;
  lru_.erase(it->second);
  table_.erase(it);
}

std::unique_ptr<InferResponse> ResponseCache::Lookup(const CacheKey& key) {
  std::shared_ptr<const InferResponse> found;
  {
    MutexLock lock(mu_);
    ++stats_.lookups;
    auto it = FindLocked(key);
    if (it == table_.end()) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, it->second);  // iterators stay valid
    found = it->second->response;
  }
  return ShareResponse(found);
}

bool ResponseCache::Insert(const CacheKey& key, const InferResponse& response) {
  const uint64_t size = EntrySize(key, response);
  if (size > capacity_) {
    MutexLock lock(mu_);
    ++stats_.too_large;
    return false;
  }
  Entry entry;
  entry.key = key.Flatten();
  entry.size = size;
  entry.response = CloneResponse(response);
  MutexLock lock(mu_);
  // Two misses of one key ran the model both: keep one entry.
  if (auto it = FindLocked(key); it != table_.end()) EraseLocked(it);
  while (!lru_.empty() && stats_.bytes + size > capacity_) {
    // The least recently used entry, found among those of its hash.
    auto victim = std::prev(lru_.end());
    auto it = table_.find(victim->hash);
    while (it->second != victim) ++it;
    EraseLocked(it);
    ++stats_.evictions;
  }
  entry.hash = key.hash();
  lru_.push_front(std::move(entry));
  table_.emplace(key.hash(), lru_.begin());
  stats_.bytes += size;
  ++stats_.entries;
  ++stats_.inserts;
  return true;
}

ResponseCacheStats ResponseCache::Stats() const {
  MutexLock lock(mu_);
  return stats_;
}

StatusOr<uint64_t> ResponseCacheCapacity(const std::vector<std::string>& cache_config,
                                         int64_t byte_size) {
  if (byte_size >= 0 && !cache_config.empty()) {
    return InvalidArgument(
        "Incompatible flags --response-cache-byte-size and --cache-config both provided. Please "
        "provide one or the other.");
  }
  if (byte_size >= 0) return static_cast<uint64_t>(byte_size);  // 0: no cache (Triton)
  uint64_t size = 0;
  bool sized = false;
  for (const auto& value : cache_config) {
    INFERD_RETURN_IF_ERROR(ApplyCacheConfig(value, size, sized));
  }
  if (!cache_config.empty() && !sized) {
    return InvalidArgument("--cache-config local needs size=<bytes>");
  }
  return size;
}

}  // namespace inferd
