#include "repository/s3_repository_source.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "repository/model_cache_manifest.h"
#include "repository/repository_scan.h"

namespace inferd {
namespace fs = std::filesystem;

namespace {

// FNV-1a: the cache directory of a repository must be stable across
// restarts and processes (std::hash need not be), not cryptographic.
std::string HashHex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

// A relative path whose components are all real names: joining it to a
// directory cannot leave that directory. A trailing '/' (a directory
// marker) is allowed.
bool IsSafeRelativePath(std::string_view path) {
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return false;
  size_t start = 0;
  for (;;) {
    const size_t end = path.find('/', start);
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    // A NUL would cut the path short in the system calls: two keys could
    // then name one file.
    if (part.find('\0') != std::string_view::npos) return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
}

}  // namespace

struct S3RepositorySource::Snapshot {
  ModelListings listings;
  std::map<std::string, ModelObjects> objects;  // models without a problem
};

struct S3RepositorySource::CachedModel {
  std::string directory;   // <cache root>/<model>
  int64_t generation = 0;  // 0: nothing cached
  ManifestEntries entries;
  std::string GenerationDir(int64_t g) const { return directory + "/g" + std::to_string(g); }
};

S3RepositorySource::S3RepositorySource(std::shared_ptr<const s3::ObjectStore> store,
                                       const std::string& prefix, S3RepositoryOptions options)
    : store_(std::move(store)),
      prefix_(prefix.empty() ? "" : prefix + "/"),
      options_(std::move(options)),
      name_(options_.name.empty() ? store_->Describe() + (prefix.empty() ? "" : "/" + prefix)
                                  : options_.name),
      cache_root_(options_.cache_directory + "/" + HashHex(store_->Describe() + "\n" + prefix_)) {
  if (options_.metrics) {
    std::vector<std::string> kinds;
    for (auto kind :
         {s3::S3ErrorKind::kUnreachable, s3::S3ErrorKind::kTimeout, s3::S3ErrorKind::kAccessDenied,
          s3::S3ErrorKind::kNotFound, s3::S3ErrorKind::kTruncated, s3::S3ErrorKind::kServer,
          s3::S3ErrorKind::kOther}) {
      kinds.emplace_back(s3::S3ErrorKindName(kind));
    }
    options_.metrics->Register(name_, kinds);
  }
}

S3RepositorySource::~S3RepositorySource() {
  MutexLock lock(mu_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string S3RepositorySource::KeyOf(const std::string& model, const std::string& path) const {
  return prefix_ + model + "/" + path;
}

void S3RepositorySource::CountError(const Status& status) const {
  if (options_.metrics && !status.ok()) {
    options_.metrics->AddError(name_, s3::S3ErrorKindName(s3::KindOf(status)));
  }
}

StatusOr<std::shared_ptr<const S3RepositorySource::Snapshot>> S3RepositorySource::List() const {
  const auto started = std::chrono::steady_clock::now();
  auto listed = store_->ListObjects(prefix_);
  if (!listed.ok()) {
    CountError(listed.status());
    return Status(listed.status().code(),
                  "cannot list model repository '" + name_ + "': " + listed.status().message());
  }
  if (options_.metrics) options_.metrics->AddListing(name_);
  auto snap = std::make_shared<Snapshot>();
  for (const s3::ObjectInfo& o : *listed) {
    if (o.key.compare(0, prefix_.size(), prefix_) != 0) continue;
    const std::string rel = o.key.substr(prefix_.size());
    const size_t slash = rel.find('/');
    if (slash == std::string::npos || slash == 0) continue;  // a plain file, or "//"
    const std::string model = rel.substr(0, slash);
    if (model[0] == '.') continue;
    auto [it, added] = snap->listings.try_emplace(model);
    if (added) {
      it->second.location = name_ + "/" + model;
      if (!IsValidModelName(model)) it->second.problem = "invalid model name";
    }
    if (!it->second.problem.empty()) continue;
    ModelObjects& objects = snap->objects[model];
    const std::string path = rel.substr(slash + 1);
    if (!path.empty()) objects.push_back(ModelObject{path, o.size, o.etag});
  }
  // Listings come in key order, which is path order within a model; sorted
  // again so that a store that does not keep that promise cannot change a
  // fingerprint.
  for (auto& [model, objects] : snap->objects) {
    std::sort(objects.begin(), objects.end(),
              [](const ModelObject& a, const ModelObject& b) { return a.path < b.path; });
  }
  std::shared_ptr<const Snapshot> out = std::move(snap);
  MutexLock lock(mu_);
  // Only a listing that started later replaces the snapshot: a slow one
  // (the index) finishing after a poll's must not bring back older content
  // for the poll's per-model calls. Its age counts from when it started.
  if (!snapshot_ || started >= snapshot_time_) {
    snapshot_ = out;
    snapshot_time_ = started;
  }
  return out;
}

StatusOr<ModelListings> S3RepositorySource::ListModels() const {
  auto snap = List();
  if (!snap.ok()) return snap.status();
  return (*snap)->listings;
}

StatusOr<S3RepositorySource::ModelObjects> S3RepositorySource::ObjectsOf(
    const std::string& model) const {
  auto not_found = [&] {
    return NotFound("no model '" + model + "' in model repository '" + name_ + "'");
  };
  if (!IsValidModelName(model) || model[0] == '.') return not_found();
  std::shared_ptr<const Snapshot> snap;
  {
    MutexLock lock(mu_);
    if (snapshot_ && std::chrono::steady_clock::now() - snapshot_time_ <= options_.listing_ttl) {
      snap = snapshot_;
    }
  }
  if (snap) {
    auto it = snap->objects.find(model);
    if (it == snap->objects.end()) return not_found();
    return it->second;
  }
  const std::string model_prefix = prefix_ + model + "/";
  auto listed = store_->ListObjects(model_prefix);
  if (!listed.ok()) {
    CountError(listed.status());
    return Status(listed.status().code(), "cannot list model '" + model + "' in '" + name_ +
                                              "': " + listed.status().message());
  }
  if (listed->empty()) return not_found();
  ModelObjects objects;
  for (const s3::ObjectInfo& o : *listed) {
    if (o.key.size() <= model_prefix.size()) continue;  // the model's directory marker
    objects.push_back(ModelObject{o.key.substr(model_prefix.size()), o.size, o.etag});
  }
  std::sort(objects.begin(), objects.end(),
            [](const ModelObject& a, const ModelObject& b) { return a.path < b.path; });
  return objects;
}

StatusOr<std::set<int64_t>> S3RepositorySource::ListVersions(const std::string& model) const {
  auto objects = ObjectsOf(model);
  if (!objects.ok()) return objects.status();
  std::set<int64_t> versions;
  for (const ModelObject& o : *objects) {
    const size_t slash = o.path.find('/');
    if (slash == std::string::npos) continue;  // a top-level file
    if (auto v = ParseVersionName(o.path.substr(0, slash))) versions.insert(*v);
  }
  return versions;
}

StatusOr<std::string> S3RepositorySource::Fingerprint(const std::string& model) const {
  auto objects = ObjectsOf(model);
  if (!objects.ok()) return objects.status();
  // Never empty, so that a model holding only its directory marker still
  // has a fingerprint.
  std::string fp = "s3\n";
  for (const ModelObject& o : *objects) {
    fp += o.path;
    fp += '\0';
    fp += std::to_string(o.size);
    fp += '\0';
    fp += o.etag;
    fp += '\n';
  }
  return fp;
}

StatusOr<std::string> S3RepositorySource::ReadFile(const std::string& model,
                                                   const std::string& relative_path) const {
  if (relative_path.empty() || relative_path.front() == '/' || !IsSafeRelativePath(relative_path) ||
      relative_path.back() == '/') {
    return InvalidArgument("file path '" + relative_path + "' must stay inside the model");
  }
  auto objects = ObjectsOf(model);
  if (!objects.ok()) return objects.status();
  auto it = std::find_if(objects->begin(), objects->end(),
                         [&](const ModelObject& o) { return o.path == relative_path; });
  const std::string missing = "model '" + model + "' has no file '" + relative_path + "'";
  if (it == objects->end()) return NotFound(missing);
  // The cached copy, when it is this very object: a reload or a restart
  // reads config.pbtxt without a request. Only from a cache this process
  // holds: reading one (CacheOf) tidies it, which must not happen under
  // another process that uses it.
  std::string local;
  if (LockCacheRoot().ok()) {
    auto cached = CacheOf(model);
    MutexLock lock(mu_);
    auto e = cached->entries.find(relative_path);
    if (cached->generation > 0 && e != cached->entries.end() &&
        e->second == ManifestEntry{it->etag, it->size}) {
      local = cached->GenerationDir(cached->generation) + "/" + relative_path;
    }
  }
  if (!local.empty()) {
    std::error_code ec;
    if (fs::file_size(local, ec) == it->size && !ec) {
      std::string content = ReadWholeFile(local);
      if (content.size() == it->size) {
        if (options_.metrics) options_.metrics->AddCacheHits(name_, 1);
        return content;
      }
    }
    // Removed under us (a newer generation replaced it): ask the store.
  }
  const auto start = std::chrono::steady_clock::now();
  auto content = store_->GetToString(KeyOf(model, relative_path), options_.max_read_bytes);
  if (!content.ok()) {
    CountError(content.status());
    if (content.status().code() == StatusCode::kNotFound) return NotFound(missing);
    return Status(content.status().code(), "cannot read '" + relative_path + "' of model '" +
                                               model + "': " + content.status().message());
  }
  if (options_.metrics) {
    options_.metrics->AddFetched(name_, 1, content->size(), MicrosSince(start));
  }
  return content;
}

std::shared_ptr<S3RepositorySource::CachedModel> S3RepositorySource::CacheOf(
    const std::string& model) const {
  MutexLock lock(mu_);
  auto found = cache_.find(model);
  if (found != cache_.end()) return found->second;
  auto cm = std::make_shared<CachedModel>();
  cm->directory = cache_root_ + "/" + model;
  // A previous process's manifest: what it downloaded is reused. One that
  // does not parse, or names a generation that is gone, is ignored (the
  // model is downloaded again).
  auto manifest = ReadModelCacheManifest(cm->directory + "/manifest");
  std::error_code ec;
  if (manifest && fs::is_directory(cm->GenerationDir(manifest->generation), ec)) {
    cm->generation = manifest->generation;
    cm->entries = std::move(manifest->entries);
  }
  // What a previous process left half done, or no longer needs. Nothing of
  // this process can be using them: this is the model's first use.
  for (fs::directory_iterator it(cm->directory, ec), end; !ec && it != end; it.increment(ec)) {
    auto g = GenerationOf(it->path().filename().string());
    const bool current = it->path().filename().string() == "g" + std::to_string(cm->generation);
    if (g && !current) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
  cache_.emplace(model, cm);
  return cm;
}

Status S3RepositorySource::Download(const std::string& model, const ModelObjects& fetch,
                                    const std::string& staging) const {
  if (fetch.empty()) return Status::Ok();
  const auto start = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> objects{0};
  std::atomic<uint64_t> bytes{0};
  Mutex error_mu;
  Status first;
  std::string first_key;
  auto work = [&] {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= fetch.size()) return;
      const ModelObject& o = fetch[i];
      const s3::ObjectInfo expected{KeyOf(model, o.path), o.size, o.etag};
      Status s = store_->GetToFile(expected, staging + "/" + o.path);
      // A store that is briefly unavailable, slow or cut a transfer short
      // gets two more tries (after 0.25 s and 1 s) before the model fails:
      // one 503 among hundreds of files should not fail a load.
      for (int retry = 0; retry < 2 && !s.ok() && !failed.load(); ++retry) {
        const StatusCode code = s.code();
        if (code != StatusCode::kUnavailable && code != StatusCode::kDeadlineExceeded &&
            code != StatusCode::kDataLoss) {
          break;
        }
        CountError(s);
        std::this_thread::sleep_for(std::chrono::milliseconds(retry == 0 ? 250 : 1000));
        s = store_->GetToFile(expected, staging + "/" + o.path);
      }
      if (s.ok()) {
        objects.fetch_add(1);
        bytes.fetch_add(o.size);
        continue;
      }
      CountError(s);
      failed.store(true);
      MutexLock lock(error_mu);
      if (first.ok()) {
        first = s;
        first_key = expected.key;
      }
    }
  };
  {
    const size_t n = std::min<size_t>(std::max(options_.download_threads, 1), fetch.size());
    std::vector<std::jthread> pool;
    pool.reserve(n);
    for (size_t i = 0; i < n; ++i) pool.emplace_back(work);
  }
  if (options_.metrics) {
    options_.metrics->AddFetched(name_, objects.load(), bytes.load(), MicrosSince(start));
  }
  MutexLock lock(error_mu);
  if (first.ok()) return first;
  if (first.code() == StatusCode::kNotFound) {
    return NotFound("object '" + first_key + "' of model '" + model + "' was deleted from '" +
                    name_ + "' after it was listed: " + first.message());
  }
  return Status(first.code(),
                "cannot fetch model '" + model + "' from '" + name_ + "': " + first.message());
}

Status S3RepositorySource::LockCacheRoot() const {
  MutexLock lock(mu_);
  if (lock_fd_ >= 0) return Status::Ok();
  std::error_code ec;
  // A cache directory made here is private too (0700); one the operator
  // made (an emptyDir, a volume) is taken as it is.
  fs::create_directories(fs::path(options_.cache_directory).parent_path(), ec);
  ::mkdir(options_.cache_directory.c_str(), 0700);
  // The repository's own directory is private: cached files are loaded
  // (and, for some backends, run) without being downloaded again.
  if (::mkdir(cache_root_.c_str(), 0700) != 0 && errno != EEXIST) {
    return Internal("cannot create model cache directory '" + cache_root_ +
                    "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(cache_root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return Status(StatusCode::kFailedPrecondition, "model cache directory '" + cache_root_ +
                                                       "' is not a directory owned by this user");
  }
  const int fd =
      ::open((cache_root_ + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Internal("cannot open '" + cache_root_ + "/.lock': " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status(StatusCode::kFailedPrecondition,
                  "model cache directory '" + cache_root_ +
                      "' is in use by another inferd process (give each its own "
                      "--model-cache-dir)");
  }
  lock_fd_ = fd;
  std::ofstream about(cache_root_ + "/.repository");
  about << name_ << "\n";
  return Status::Ok();
}

std::shared_ptr<const void> S3RepositorySource::Pin(const std::string& model,
                                                    const std::string& directory) const {
  const std::string mine = cache_root_ + "/" + model + "/g";
  if (directory.compare(0, mine.size(), mine) != 0) return nullptr;
  MutexLock lock(mu_);
  std::weak_ptr<const void>& slot = pins_[directory];
  if (auto held = slot.lock()) return held;
  auto pin = std::make_shared<const int>(0);
  slot = pin;
  return pin;
}

bool S3RepositorySource::Pinned(const std::string& directory) const {
  MutexLock lock(mu_);
  auto it = pins_.find(directory);
  if (it == pins_.end()) return false;
  if (!it->second.expired()) return true;
  pins_.erase(it);
  return false;
}

bool S3RepositorySource::WantedFiles::Wants(const std::string& path) const {
  const size_t slash = path.find('/');
  if (slash == std::string::npos) return true;
  const std::string top = path.substr(0, slash);
  // warmup/ (model_warmup's input_data_file) and initial_state/ (sequence
  // state data_file) are read at load like the top-level files.
  return versions.count(top) > 0 || top == "warmup" || top == "initial_state";
}

StatusOr<S3RepositorySource::WantedFiles> S3RepositorySource::Wanted(
    const std::string& model, const std::set<int64_t>& versions) const {
  auto objects = ObjectsOf(model);
  if (!objects.ok()) return objects.status();
  WantedFiles wanted;
  for (int64_t v : versions) wanted.versions.insert(std::to_string(v));
  for (const ModelObject& o : *objects) {
    if (!wanted.Wants(o.path)) continue;
    if (!IsSafeRelativePath(o.path)) {
      return InvalidArgument("object '" + KeyOf(model, o.path) + "' of model '" + model +
                             "' cannot be stored as a file (empty, '.' or '..' path component)");
    }
    if (o.path.back() == '/') {
      wanted.directories.push_back(o.path);
    } else {
      wanted.files.push_back(o);
    }
  }
  return wanted;
}

StatusOr<uint64_t> S3RepositorySource::Stage(
    const std::string& model, const WantedFiles& wanted, const std::string& current,
    const std::function<bool(const ModelObject&)>& in_current, const std::string& staging) const {
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (ec) {
    return Internal("cannot create model cache directory '" + staging + "': " + ec.message());
  }
  for (const std::string& d : wanted.directories) fs::create_directories(staging + "/" + d, ec);
  ModelObjects fetch;
  uint64_t reused = 0;
  for (const ModelObject& o : wanted.files) {
    const std::string target = staging + "/" + o.path;
    fs::create_directories(fs::path(target).parent_path(), ec);
    if (ec) return Internal("cannot create a directory for '" + target + "': " + ec.message());
    if (in_current(o)) {
      // Unchanged: shared with the current generation, not downloaded.
      fs::create_hard_link(current + "/" + o.path, target, ec);
      if (ec) fs::copy_file(current + "/" + o.path, target, ec);
      if (!ec) {
        ++reused;
        continue;
      }
    }
    fetch.push_back(o);
  }
  INFERD_RETURN_IF_ERROR(Download(model, fetch, staging));
  return reused;
}

void S3RepositorySource::CommitGeneration(CachedModel& cm, int64_t next,
                                          const ModelObjects& files) const {
  ModelCacheManifest manifest{next, {}};
  for (const ModelObject& o : files) manifest.entries[o.path] = ManifestEntry{o.etag, o.size};
  // A manifest that cannot be written costs a download after a restart,
  // nothing now.
  WriteModelCacheManifest(cm.directory + "/manifest", manifest);
  {
    MutexLock lock(mu_);
    cm.generation = next;
    cm.entries = std::move(manifest.entries);
  }
  std::error_code ec;
  // Older generations go, except those a loaded version still reads (a
  // version whose reload failed keeps serving from its generation).
  for (fs::directory_iterator it(cm.directory, ec), end; !ec && it != end; it.increment(ec)) {
    auto g = GenerationOf(it->path().filename().string());
    if (g && *g != next && !Pinned(it->path().string())) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

StatusOr<std::string> S3RepositorySource::Materialize(const std::string& model,
                                                      const std::set<int64_t>& versions) {
  if (Status locked = LockCacheRoot(); !locked.ok()) return locked;
  auto wanted = Wanted(model, versions);
  if (!wanted.ok()) return wanted.status();

  auto cm = CacheOf(model);
  int64_t generation;
  ManifestEntries entries;
  {
    MutexLock lock(mu_);
    generation = cm->generation;
    entries = cm->entries;
  }
  const std::string current = cm->GenerationDir(generation);
  auto in_current = [&](const ModelObject& o) {
    auto e = entries.find(o.path);
    std::error_code ec;
    return generation > 0 && e != entries.end() && e->second == ManifestEntry{o.etag, o.size} &&
           fs::file_size(current + "/" + o.path, ec) == o.size && !ec;
  };

  // Unchanged: the current generation holds exactly the wanted files (no
  // wanted file changed, none was deleted from the store).
  bool unchanged = generation > 0;
  size_t wanted_in_manifest = 0;
  for (const auto& [path, entry] : entries) wanted_in_manifest += wanted->Wants(path) ? 1 : 0;
  unchanged = unchanged && wanted_in_manifest == wanted->files.size();
  for (const ModelObject& o : wanted->files) unchanged = unchanged && in_current(o);
  for (const std::string& d : wanted->directories) {
    std::error_code ec;
    unchanged = unchanged && fs::is_directory(current + "/" + d, ec);
  }
  if (unchanged) {
    if (options_.metrics) options_.metrics->AddCacheHits(name_, wanted->files.size());
    return current;
  }

  const int64_t next = generation + 1;
  const std::string final_dir = cm->GenerationDir(next);
  const std::string staging = final_dir + ".partial";
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  auto reused = Stage(model, *wanted, current, in_current, staging);
  if (reused.ok()) fs::rename(staging, final_dir, ec);
  if (!reused.ok() || ec) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    if (!reused.ok()) return reused.status();
    return Internal("cannot rename '" + staging + "': " + ec.message());
  }
  CommitGeneration(*cm, next, wanted->files);
  if (options_.metrics && *reused > 0) options_.metrics->AddCacheHits(name_, *reused);
  return final_dir;
}

std::vector<std::string> S3RepositorySource::PathsToRedact() const {
  std::vector<std::string> paths = {options_.cache_directory};
  std::error_code ec;
  auto full = fs::weakly_canonical(options_.cache_directory, ec);
  if (!ec) paths.push_back(full.string());
  auto abs = fs::absolute(options_.cache_directory, ec);
  if (!ec) paths.push_back(abs.lexically_normal().string());
  return paths;
}

}  // namespace inferd
