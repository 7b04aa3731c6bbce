#include "repository/repository_source_factory.h"

#include <unistd.h>

#include <filesystem>
#include <optional>

#include "objectstore/aws_credentials.h"
#include "objectstore/s3_client.h"
#include "objectstore/s3_location.h"
#include "repository/composite_repository_source.h"
#include "repository/local_repository_source.h"
#include "repository/repository_scan.h"
#include "repository/s3_repository_source.h"

namespace inferd {
namespace {

// A repository that cannot be used at all: it lists with the reason and
// holds no model.
class UnusableRepositorySource : public RepositorySource {
 public:
  explicit UnusableRepositorySource(Status reason) : reason_(std::move(reason)) {}

  StatusOr<ModelListings> ListModels() const override { return reason_; }
  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override {
    return NotFound(model);
  }
  StatusOr<std::string> Fingerprint(const std::string& model) const override {
    return NotFound(model);
  }
  StatusOr<std::string> ReadFile(const std::string& model, const std::string&) const override {
    return NotFound(model);
  }
  StatusOr<std::string> Materialize(const std::string& model, const std::set<int64_t>&) override {
    return NotFound(model);
  }
  std::vector<std::string> PathsToRedact() const override { return {}; }

 private:
  Status NotFound(const std::string& model) const {
    return inferd::NotFound("no model '" + model + "': " + reason_.message());
  }
  const Status reason_;
};

// The S3 parts of one MakeRepositorySource call: credentials are resolved
// on first need, once.
class S3Factory {
 public:
  explicit S3Factory(const RepositorySourceOptions& options) : options_(options) {}

  std::unique_ptr<RepositorySource> Make(const std::string& url) {
    auto location = s3::ParseS3Url(url);
    if (!location.ok()) return Unusable(url, location.status());
    location->virtual_hosted = options_.s3_virtual_hosted;
    if (!config_) config_ = s3::ResolveAwsConfig();
    if (!config_->ok()) return Unusable(url, config_->status());
    s3::ClientOptions client;
    client.credentials = (*config_)->credentials;
    if (!(*config_)->region.empty()) client.region = (*config_)->region;
    S3RepositoryOptions source;
    source.cache_directory =
        options_.model_cache_dir.empty() ? DefaultModelCacheDirectory() : options_.model_cache_dir;
    source.metrics = options_.metrics;
    source.name = location->ToString();
    std::string prefix = location->prefix;
    auto store = std::make_shared<s3::S3Client>(std::move(*location), std::move(client));
    return std::make_unique<S3RepositorySource>(std::move(store), std::move(prefix),
                                                std::move(source));
  }

 private:
  static std::unique_ptr<RepositorySource> Unusable(const std::string& url, const Status& s) {
    return std::make_unique<UnusableRepositorySource>(
        Status(s.code(), "model repository '" + url + "': " + s.message()));
  }

  const RepositorySourceOptions& options_;
  std::optional<StatusOr<s3::AwsConfig>> config_;
};

}  // namespace

std::string DefaultModelCacheDirectory() {
  std::error_code ec;
  std::filesystem::path temp = std::filesystem::temp_directory_path(ec);
  if (ec) temp = "/tmp";
  // One per user: another user cannot have made it first.
  return (temp / ("inferd-model-cache-" + std::to_string(::geteuid()))).string();
}

std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       const RepositorySourceOptions& options) {
  // Every local repository's links may lead into any of the others.
  std::vector<std::string> local;
  for (const auto& r : repositories) {
    if (!s3::IsS3Url(r)) local.push_back(r);
  }
  const SymlinkRules rules(local, options.follow_external_symlinks);
  S3Factory s3(options);
  auto make_one = [&](const std::string& repository) -> std::unique_ptr<RepositorySource> {
    if (s3::IsS3Url(repository)) return s3.Make(repository);
    return std::make_unique<LocalRepositorySource>(repository, rules);
  };
  if (repositories.size() == 1) return make_one(repositories[0]);
  std::vector<std::unique_ptr<RepositorySource>> children;
  children.reserve(repositories.size());
  for (const auto& repository : repositories) children.push_back(make_one(repository));
  return std::make_shared<CompositeRepositorySource>(std::move(children));
}

std::shared_ptr<RepositorySource> MakeRepositorySource(const std::vector<std::string>& repositories,
                                                       bool follow_external_symlinks) {
  RepositorySourceOptions options;
  options.follow_external_symlinks = follow_external_symlinks;
  return MakeRepositorySource(repositories, options);
}

Status CheckRepositoryString(const std::string& repository, std::string* description) {
  if (!s3::IsS3Url(repository)) return CheckRepositoryPath(repository);
  auto location = s3::ParseS3Url(repository);
  if (!location.ok()) {
    return InvalidArgument("model repository '" + repository + "': " + location.status().message());
  }
  auto config = s3::ResolveAwsConfig();
  if (!config.ok()) {
    return InvalidArgument("model repository '" + repository + "': " + config.status().message());
  }
  if (description) {
    *description = location->ToString() + ": credentials: " + config->source + ", region " +
                   (config->region.empty() ? "us-east-1" : config->region);
  }
  return Status::Ok();
}

}  // namespace inferd
