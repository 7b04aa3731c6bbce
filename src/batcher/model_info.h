// ModelInfoCache: what the batcher knows about each model (merge.h's
// ModelInfo), read from the upstream's ModelConfig RPC and cached per
// (name, version).
//
// An entry is refreshed when older than `ttl`, and dropped by Invalidate
// (the front end calls it after a NOT_FOUND or UNAVAILABLE answer about the
// model). Concurrent lookups of a model being fetched wait for that one
// fetch. A model the upstream cannot describe (unknown, upstream down) is
// nullopt for `negative_ttl`: its requests pass through, and inferd answers
// them itself.
//
// Threading: every method from any thread; `next` runs once, either on the
// caller's thread (cached) or on the fetch's completion thread, never under
// the cache's lock. The fetch function must outlive the cache's calls.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batcher/merge.h"
#include "grpc_service.pb.h"

namespace inferd::batcher {

// The ModelInfo of a model's config.
ModelInfo ModelInfoFromConfig(const inference::ModelConfig& config);

class ModelInfoCache {
 public:
  using FetchDone = std::function<void(bool ok, const inference::ModelConfig& config)>;
  using Fetch =
      std::function<void(const std::string& name, const std::string& version, FetchDone done)>;
  using Next = std::function<void(std::optional<ModelInfo>)>;

  ModelInfoCache(Fetch fetch, std::chrono::milliseconds ttl,
                 std::chrono::milliseconds negative_ttl = std::chrono::milliseconds(1000));

  void Get(const std::string& name, const std::string& version, Next next);
  void Invalidate(const std::string& name, const std::string& version);

 private:
  struct Entry {
    std::optional<ModelInfo> info;
    std::chrono::steady_clock::time_point expires{};
    bool fetching = false;
    std::vector<Next> waiters;
  };
  void Done(const std::pair<std::string, std::string>& key, bool ok,
            const inference::ModelConfig& config);

  const Fetch fetch_;
  const std::chrono::milliseconds ttl_, negative_ttl_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;
};

}  // namespace inferd::batcher
