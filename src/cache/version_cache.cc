#include "cache/version_cache.h"

#include <atomic>
#include <variant>

namespace inferd {
namespace {

// Forwards a missed request's signals, inserting its successful final
// response into the cache first, and records the miss once.
class InsertingSink final : public InferResponseSink {
 public:
  InsertingSink(std::shared_ptr<ResponseCache> cache, CacheKey key, ModelStats* stats, Clock* clock,
                uint64_t lookup_ns, std::unique_ptr<InferResponseSink> inner)
      : cache_(std::move(cache)),
        key_(std::move(key)),
        stats_(stats),
        clock_(clock),
        lookup_ns_(lookup_ns),
        inner_(std::move(inner)) {}

  void Send(std::unique_ptr<InferResponse> response, bool final) override {
    if (final && !recorded_) {
      const auto start = clock_->Now();
      cache_->Insert(key_, *response);
      Record(ElapsedNs(start, clock_->Now()));
    }
    inner_->Send(std::move(response), final);
  }
  void Finish(Status status) override {
    Record(0);
    inner_->Finish(std::move(status));
  }

 private:
  void Record(uint64_t insert_ns) {
    if (recorded_) return;
    recorded_ = true;
    stats_->RecordCacheMiss(lookup_ns_ + insert_ns);
  }

  std::shared_ptr<ResponseCache> cache_;
  const CacheKey key_;
  ModelStats* const stats_;
  Clock* const clock_;
  const uint64_t lookup_ns_;
  bool recorded_ = false;  // calls never overlap (sink contract)
  std::unique_ptr<InferResponseSink> inner_;
};

// Every load of a version gets its own id: a reload's entries never match
// the previous load's.
std::atomic<uint64_t> next_load_id{1};

}  // namespace

VersionCache::VersionCache(std::shared_ptr<ResponseCache> cache, std::string model, int64_t version,
                           ModelStats* stats, Clock* clock)
    : cache_(std::move(cache)),
      model_(std::move(model)),
      version_(version),
      load_id_(next_load_id.fetch_add(1, std::memory_order_relaxed)),
      stats_(stats),
      clock_(clock) {}

bool VersionCache::Serve(std::unique_ptr<InferRequest>& request,
                         std::unique_ptr<InferResponseSink>& sink) {
  // A sequence's answer depends on its state, not only on its inputs.
  if (!std::holds_alternative<std::monostate>(request->correlation_id)) return false;
  const auto arrival = clock_->Now();
  auto key = BuildCacheKey(model_, version_, *request, load_id_);
  if (!key.ok()) return false;  // an input in GPU memory
  std::unique_ptr<InferResponse> hit = cache_->Lookup(*key);
  const auto looked_up = clock_->Now();
  if (hit == nullptr) {
    // Owned from here: the request's data may be gone when the answer comes.
    CacheKey owned(key->Flatten(), key->hash());
    sink = std::make_unique<InsertingSink>(cache_, std::move(owned), stats_, clock_,
                                           ElapsedNs(arrival, looked_up), std::move(sink));
    return false;
  }
  hit->id = request->id;
  const uint64_t total = ElapsedNs(arrival, looked_up);
  stats_->RecordCacheHit(total);
  stats_->RecordSuccess(total, 0);
  auto done = std::move(sink);
  request.reset();
  done->Send(std::move(hit), /*final=*/true);
  return true;
}

}  // namespace inferd
