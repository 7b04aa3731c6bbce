#include "batcher/model_info.h"

namespace inferd::batcher {

ModelInfo ModelInfoFromConfig(const inference::ModelConfig& config) {
  ModelInfo info;
  info.max_batch_size = config.max_batch_size();
  info.decoupled = config.model_transaction_policy().decoupled();
  info.sequence = config.has_sequence_batching();
  return info;
}

ModelInfoCache::ModelInfoCache(Fetch fetch, std::chrono::milliseconds ttl,
                               std::chrono::milliseconds negative_ttl)
    : fetch_(std::move(fetch)), ttl_(ttl), negative_ttl_(negative_ttl) {}

void ModelInfoCache::Get(const std::string& name, const std::string& version, Next next) {
  auto key = std::make_pair(name, version);
  std::unique_lock<std::mutex> lock(mu_);
  Entry& e = entries_[key];
  if (!e.fetching && e.expires > std::chrono::steady_clock::now()) {
    std::optional<ModelInfo> info = e.info;
    lock.unlock();
    next(info);
    return;
  }
  e.waiters.push_back(std::move(next));
  if (e.fetching) return;
  e.fetching = true;
  lock.unlock();
  fetch_(name, version,
         [this, key](bool ok, const inference::ModelConfig& config) { Done(key, ok, config); });
}

void ModelInfoCache::Done(const std::pair<std::string, std::string>& key, bool ok,
                          const inference::ModelConfig& config) {
  std::vector<Next> waiters;
  std::optional<ModelInfo> info;
  if (ok) info = ModelInfoFromConfig(config);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[key];
    e.fetching = false;
    e.info = info;
    e.expires = std::chrono::steady_clock::now() + (ok ? ttl_ : negative_ttl_);
    waiters.swap(e.waiters);
  }
  for (Next& w : waiters) w(info);
}

void ModelInfoCache::Invalidate(const std::string& name, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find({name, version});
  if (it != entries_.end() && !it->second.fetching) entries_.erase(it);
}

}  // namespace inferd::batcher
