// FakeRepositorySource: an in-memory model repository whose content the test
// changes between operations. Materialize writes the model's files into a
// cache directory of its own, as a remote source would, and records what it
// was asked for.
#pragma once

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "repository/repository_source.h"

namespace inferd::testing {

class FakeRepositorySource : public RepositorySource {
 public:
  // `cache` is the directory Materialize writes into (created, and removed
  // by the destructor).
  explicit FakeRepositorySource(std::filesystem::path cache) : cache_(std::move(cache)) {
    std::filesystem::remove_all(cache_);
  }
  ~FakeRepositorySource() override { std::filesystem::remove_all(cache_); }

  // A model with this config and these (empty) version directories.
  void SetModel(const std::string& name, const std::string& config, std::vector<int> versions) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& files = models_[name];
    files.clear();
    files["config.pbtxt"] = config;
    for (int v : versions) files[std::to_string(v) + "/"] = "";
  }
  void SetFile(const std::string& name, const std::string& path, const std::string& content) {
    std::lock_guard<std::mutex> lock(mu_);
    models_[name][path] = content;
  }
  void RemoveModel(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    models_.erase(name);
    problems_.erase(name);
  }
  void SetProblem(const std::string& name, const std::string& problem) {
    std::lock_guard<std::mutex> lock(mu_);
    problems_[name] = problem;
  }
  // Non-OK: every listing fails with it.
  void SetListingError(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    listing_error_ = std::move(status);
  }
  // Non-OK: the next Materialize fails with it (a store that failed a
  // download), once.
  void FailNextMaterialize(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    materialize_error_ = std::move(status);
  }
  // How many times ReadFile read a file of `model`.
  int reads(const std::string& model) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reads_.find(model);
    return it == reads_.end() ? 0 : it->second;
  }
  // Non-OK: every ReadFile fails with it (a store that cannot be reached).
  void SetReadError(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    read_error_ = std::move(status);
  }
  // (model, versions) of every Materialize call, in order.
  std::vector<std::pair<std::string, std::set<int64_t>>> materialized() const {
    std::lock_guard<std::mutex> lock(mu_);
    return materialized_;
  }

  StatusOr<ModelListings> ListModels() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!listing_error_.ok()) return listing_error_;
    ModelListings out;
    for (const auto& [name, files] : models_) {
      auto problem = problems_.find(name);
      out[name] = ModelListing{"fake://" + name, problem == problems_.end() ? "" : problem->second};
    }
    return out;
  }

  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto files = Find(model);
    if (!files.ok()) return files.status();
    std::set<int64_t> out;
    for (const auto& [path, content] : **files) {
      if (auto v = VersionOf(path)) out.insert(*v);
    }
    return out;
  }

  StatusOr<std::string> Fingerprint(const std::string& model) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto files = Find(model);
    if (!files.ok()) return files.status();
    std::string fp;
    for (const auto& [path, content] : **files) fp += path + "=" + content + "\n";
    return fp;
  }

  StatusOr<std::string> ReadFile(const std::string& model,
                                 const std::string& relative_path) const override {
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_[model];
    if (!read_error_.ok()) return read_error_;
    auto files = Find(model);
    if (!files.ok()) return files.status();
    auto it = (*files)->find(relative_path);
    if (it == (*files)->end()) return NotFound("no file " + relative_path);
    return it->second;
  }

  StatusOr<std::string> Materialize(const std::string& model,
                                    const std::set<int64_t>& versions) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto files = Find(model);
    if (!files.ok()) return files.status();
    materialized_.emplace_back(model, versions);
    if (!materialize_error_.ok()) return std::exchange(materialize_error_, Status::Ok());
    const std::filesystem::path dir = cache_ / model;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    for (const auto& [path, content] : **files) {
      auto v = VersionOf(path);
      if (v && versions.count(*v) == 0) continue;  // only the wanted versions
      const std::filesystem::path target = dir / path;
      if (path.back() == '/') {
        std::filesystem::create_directories(target);
      } else {
        std::filesystem::create_directories(target.parent_path());
        std::ofstream(target) << content;
      }
    }
    return dir.string();
  }

  std::vector<std::string> PathsToRedact() const override { return {cache_.string()}; }

 private:
  using Files = std::map<std::string, std::string>;  // path ("1/" a directory) -> content

  // The version a path belongs to ("2/model.bin" -> 2), if any.
  static std::optional<int64_t> VersionOf(const std::string& path) {
    const size_t slash = path.find('/');
    if (slash == std::string::npos) return std::nullopt;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(path.data(), path.data() + slash, v);
    if (ec != std::errc() || end != path.data() + slash) return std::nullopt;
    return v;
  }

  StatusOr<const Files*> Find(const std::string& model) const {
    auto it = models_.find(model);
    if (it == models_.end()) return NotFound("no model '" + model + "'");
    return &it->second;
  }

  const std::filesystem::path cache_;
  mutable std::mutex mu_;
  std::map<std::string, Files> models_;
  std::map<std::string, std::string> problems_;
  Status listing_error_;
  Status materialize_error_;
  Status read_error_;
  mutable std::map<std::string, int> reads_;
  std::vector<std::pair<std::string, std::set<int64_t>>> materialized_;
};

}  // namespace inferd::testing
