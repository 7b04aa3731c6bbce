// S3RepositorySource: a model repository under a key prefix of an object
// store (s3://..., objectstore/object_store.h). Models are listed from
// object keys; a model's files are downloaded into a local cache when it is
// loaded, and served from there.
//
// Listing rules, as LocalRepositorySource's on the "directories" the keys
// imply: `<prefix>/<model>/...` makes a model; keys directly under the
// prefix (plain files), empty path components and hidden names (".x") are
// skipped; a name IsValidModelName refuses is listed with the problem
// "invalid model name"; a version is a second component that is decimal
// without leading zeros and has keys below it ("<model>/1/" is a
// directory marker and counts). Keys are taken byte for byte (spaces,
// '+', unicode).
//
// Listing snapshot (the cost of a poll): ListModels is ONE paginated
// ListObjects over the whole prefix and keeps the result as a snapshot.
// Per-model calls (ListVersions, Fingerprint, ReadFile's existence check,
// Materialize's object list) read that snapshot while it is younger than
// `listing_ttl`; every ModelManager operation (poll pass, load, start-up)
// begins with ListModels, so within one operation they never list again.
// After the TTL (a standalone call, or late in a long pass) a per-model call
// lists only `<prefix>/<model>/`. So a poll of 1,000 unchanged models costs
// one listing (1 request per 1,000 keys) and no GET. ListModels always lists
// afresh: it is what sees new, changed and deleted models.
//
// Fingerprint: the model's relative keys, sizes and ETags (every object
// below the model), from the snapshot.
//
// ReadFile: NOT_FOUND for a key the snapshot does not hold (no request);
// the cached copy when the cache already holds that key with the same ETag;
// otherwise one GET bounded by `max_read_bytes` (RESOURCE_EXHAUSTED above).
//
// Cache layout (materialised models), under `cache_directory`:
//   <cache>/<16 hex digits: hash of store + prefix>/.repository  what it caches (text)
//   <cache>/<hash>/.lock                 held (flock) by the process using it
//   <cache>/<hash>/<model>/manifest      generation + key -> ETag, size (text)
//   <cache>/<hash>/<model>/g<N>/...      generation N: the model's files
//   <cache>/<hash>/<model>/g<N>.partial  generation N while it is built
// Materialize downloads the top-level files and the requested versions'
// directories only. When every wanted object is in the current generation
// with the same ETag and size (and nothing wanted was deleted), it returns
// that directory unchanged: no request at all. Otherwise it builds
// generation N+1 beside it: unchanged files are hard-linked from generation
// N (copied if linking fails), changed ones downloaded (GetToFile, which
// checks size and MD5) by up to `download_threads` threads; only when every
// file is complete is g<N+1>.partial renamed to g<N+1> and the manifest
// replaced (written to a temporary name, then renamed). A failure (an object
// deleted between list and get, a truncated transfer, the store
// unreachable) removes the partial directory and fails the call: no
// partial model is ever returned, and generation N is untouched.
//
// Directory lifetime: a generation stays while it is current or pinned
// (Pin: every version loaded from it holds a token, so a version whose
// reload failed keeps its files however many generations follow); the
// others are removed by the next Materialize of the model. A new process (a
// restart) reads the manifests, so unchanged objects are not downloaded
// again; it removes partial and stale generations of a model before first
// using it. One inferd process per repository cache: the first Materialize
// takes an flock on <cache>/<hash>/.lock and fails with FAILED_PRECONDITION
// while another process holds it.
//
// Threading: as RepositorySource: listing and reading methods from any
// thread, concurrently with each other and with Materialize (one at a time).
// The snapshot and the per-model cache state are guarded by a mutex; no
// store request is made while holding it.
//
// Errors: ListModels fails with the store's status, prefixed with
// "cannot list model repository '<url>'" (the URL names endpoint and
// bucket; S3Client's message says access denied / no such bucket /
// unreachable). Per-model calls: NOT_FOUND for a model the listing does not
// hold; the store's code otherwise. Materialize: INVALID_ARGUMENT for a key
// that cannot be a file path ("..", "." or empty components); NOT_FOUND
// "... was deleted ... while it was being fetched" for an object gone
// between list and get; INTERNAL for a cache that cannot be written
// (naming the cache path: PathsToRedact hides it from clients). Every
// failed store call counts in `metrics` by S3ErrorKindName.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/thread_annotations.h"
#include "objectstore/object_store.h"
#include "repository/repository_fetch_metrics.h"
#include "repository/repository_source.h"

namespace inferd {

struct S3RepositoryOptions {
  // Root of every repository's cache (--model-cache-dir); created if missing.
  std::string cache_directory;
  // How long per-model calls reuse the snapshot of the last ListModels.
  // Every manager operation lists first, so this only has to outlast the
  // longest operation: a start-up loading 1,000 models takes minutes, and
  // with 30 s it went back to listing each model's prefix after the first
  // 30 s (three listings per model, 185 s for 1,000 models on Ceph RGW).
  std::chrono::milliseconds listing_ttl{600000};
  // Downloads of one Materialize in flight at once.
  int download_threads = 4;
  // ReadFile's bound (config.pbtxt is small; a huge one is an error).
  uint64_t max_read_bytes = 16u << 20;
  // Counters of this repository (may be null); the label is `name`.
  std::shared_ptr<RepositoryFetchMetrics> metrics;
  // The repository for messages, logs and metrics: "s3://[scheme://host:port/]bucket/prefix".
  // Empty: the store's Describe() plus the prefix.
  std::string name;
};

class S3RepositorySource : public RepositorySource {
 public:
  // `store` (shared: a client and its connections may serve several
  // repositories); `prefix`: the repository's key prefix, without leading
  // or trailing '/', empty for the whole bucket.
  S3RepositorySource(std::shared_ptr<const s3::ObjectStore> store, const std::string& prefix,
                     S3RepositoryOptions options);
  ~S3RepositorySource() override;
  S3RepositorySource(const S3RepositorySource&) = delete;
  S3RepositorySource& operator=(const S3RepositorySource&) = delete;

  StatusOr<ModelListings> ListModels() const override;
  StatusOr<std::set<int64_t>> ListVersions(const std::string& model) const override;
  StatusOr<std::string> Fingerprint(const std::string& model) const override;
  StatusOr<std::string> ReadFile(const std::string& model,
                                 const std::string& relative_path) const override;
  StatusOr<std::string> Materialize(const std::string& model,
                                    const std::set<int64_t>& versions) override;
  // A token per generation directory of this cache; null for any other.
  std::shared_ptr<const void> Pin(const std::string& model,
                                  const std::string& directory) const override;
  // The cache directory, as given and resolved.
  std::vector<std::string> PathsToRedact() const override;

  const std::string& name() const { return name_; }
  // <cache>/<hash>: where this repository's models are cached.
  const std::string& cache_root() const { return cache_root_; }

 private:
  // One object below a model: `path` relative to the model directory.
  struct ModelObject {
    std::string path;
    uint64_t size = 0;
    std::string etag;
  };
  using ModelObjects = std::vector<ModelObject>;  // sorted by path
  struct Snapshot;
  struct CachedModel;  // a model's cache state (manifest), materialize side

  StatusOr<std::shared_ptr<const Snapshot>> List() const INFERD_EXCLUDES(mu_);
  // The objects of a listed model without a problem: from a fresh snapshot,
  // else from a listing of the model's prefix. NOT_FOUND otherwise.
  StatusOr<ModelObjects> ObjectsOf(const std::string& model) const INFERD_EXCLUDES(mu_);
  // The model's cache state, read from its manifest on first use (and its
  // stale generations removed).
  std::shared_ptr<CachedModel> CacheOf(const std::string& model) const INFERD_EXCLUDES(mu_);
  // What Materialize(model, versions) must provide: the top-level files,
  // the warmup/ and initial_state/ trees and the requested versions' trees.
  struct WantedFiles {
    ModelObjects files;
    std::vector<std::string> directories;  // directory markers ("1/", "1/empty/")
    std::set<std::string> versions;        // "1", "2"
    bool Wants(const std::string& path) const;
  };
  // INVALID_ARGUMENT for a wanted key that cannot be a file path.
  StatusOr<WantedFiles> Wanted(const std::string& model, const std::set<int64_t>& versions) const;
  // Builds `staging`: files `in_current` hard-linked from `current`, the
  // rest downloaded. How many were reused, or the first failure (the caller
  // removes `staging`).
  StatusOr<uint64_t> Stage(const std::string& model, const WantedFiles& wanted,
                           const std::string& current,
                           const std::function<bool(const ModelObject&)>& in_current,
                           const std::string& staging) const;
  // Makes generation `next` (holding `files`) current: manifest written,
  // then older generations nobody pins removed.
  void CommitGeneration(CachedModel& cm, int64_t next, const ModelObjects& files) const
      INFERD_EXCLUDES(mu_);
  // Downloads `fetch` into `staging` in parallel; the first failure.
  Status Download(const std::string& model, const ModelObjects& fetch,
                  const std::string& staging) const;
  std::string KeyOf(const std::string& model, const std::string& path) const;
  void CountError(const Status& status) const;
  bool Pinned(const std::string& directory) const INFERD_EXCLUDES(mu_);
  // Creates cache_root_ (0700) and takes its lock: FAILED_PRECONDITION when
  // another process holds it, INTERNAL when it cannot be made.
  Status LockCacheRoot() const INFERD_EXCLUDES(mu_);

  const std::shared_ptr<const s3::ObjectStore> store_;
  const std::string prefix_;  // "" or "<prefix>/"
  const S3RepositoryOptions options_;
  const std::string name_;
  const std::string cache_root_;

  mutable Mutex mu_;
  mutable std::shared_ptr<const Snapshot> snapshot_ INFERD_GUARDED_BY(mu_);
  mutable std::chrono::steady_clock::time_point snapshot_time_ INFERD_GUARDED_BY(mu_);
  mutable std::map<std::string, std::shared_ptr<CachedModel>> cache_ INFERD_GUARDED_BY(mu_);
  // Generation directory -> its pin while some loaded version holds it.
  mutable std::map<std::string, std::weak_ptr<const void>> pins_ INFERD_GUARDED_BY(mu_);
  // The lock file of cache_root_ (flock), taken by the first Materialize:
  // one inferd process per repository cache. -1 until then.
  mutable int lock_fd_ INFERD_GUARDED_BY(mu_) = -1;
};

}  // namespace inferd
