// FakeObjectStore: an ObjectStore (src/objectstore/object_store.h) in
// memory for the remote repository source's unit tests, with call counters
// and fault injection (unreachable, access denied, no bucket, truncated
// transfers, a hook before each download).
//
// Threading: every method may be called from any thread (the source
// downloads on several). Ownership: shared by the test and the source.
#pragma once

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "objectstore/object_store.h"

namespace inferd::testing {

// An ObjectStore in memory. ETags are a hash of the content (a real store's
// MD5 plays the same part: a changed content changes it).
class FakeObjectStore : public s3::ObjectStore {
 public:
  enum class Fault { kNone, kUnreachable, kDenied, kNoBucket };

  void Put(const std::string& key, const std::string& content) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_[key] = content;
  }
  void Delete(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_.erase(key);
  }
  void set_fault(Fault f) { fault_ = f; }
  // The next `times` GETs of this key write half the object and fail
  // (kDataLoss).
  void TruncateNext(const std::string& key, int times = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    truncate_ = key;
    truncate_times_ = times;
  }
  // Runs before each GetToFile (on the downloading thread).
  void set_before_get(std::function<void(const std::string&)> f) { before_get_ = std::move(f); }

  std::string Describe() const override { return "s3://http://fake:9000/bucket"; }
  Status CheckBucket() const override { return Injected(); }

  StatusOr<std::vector<s3::ObjectInfo>> ListObjects(const std::string& prefix) const override {
    ++lists;
    list_prefixes.push_back(prefix);
    if (Status s = Injected(); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<s3::ObjectInfo> out;
    for (const auto& [key, content] : objects_) {
      if (key.compare(0, prefix.size(), prefix) == 0) {
        out.push_back(s3::ObjectInfo{key, content.size(), ETag(content)});
      }
    }
    return out;
  }
  StatusOr<std::vector<std::string>> ListCommonPrefixes(const std::string&) const override {
    return Unimplemented("not used");
  }
  StatusOr<std::string> GetToString(const std::string& key, uint64_t max_bytes) const override {
    ++get_strings;
    if (Status s = Injected(); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound("no such key '" + key + "' in bucket 'bucket'");
    if (it->second.size() > max_bytes) return ResourceExhausted("object too large");
    return it->second;
  }
  Status GetToFile(const s3::ObjectInfo& expected, const std::string& path) const override {
    ++gets;
    if (before_get_) before_get_(expected.key);
    if (Status s = Injected(); !s.ok()) return s;
    std::string content;
    bool truncate = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = objects_.find(expected.key);
      if (it == objects_.end()) {
        return NotFound("no such key '" + expected.key + "' in bucket 'bucket'");
      }
      content = it->second;
      truncate = truncate_ == expected.key && truncate_times_ > 0;
      if (truncate && --truncate_times_ == 0) truncate_.clear();
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return Internal("cannot write " + path);
    if (truncate) {
      out << content.substr(0, content.size() / 2);
      return DataLoss("transfer of '" + expected.key + "' ended early");
    }
    out << content;
    if (content.size() != expected.size || ETag(content) != expected.etag) {
      return DataLoss("'" + expected.key + "' does not match its ETag");
    }
    return Status::Ok();
  }

  static std::string ETag(const std::string& content) {
    return std::to_string(std::hash<std::string>()(content));
  }

  mutable std::atomic<int> lists{0};
  mutable std::atomic<int> gets{0};
  mutable std::atomic<int> get_strings{0};
  mutable std::vector<std::string> list_prefixes;

 private:
  Status Injected() const {
    switch (fault_.load()) {
      case Fault::kNone:
        return Status::Ok();
      case Fault::kUnreachable:
        return Unavailable("cannot connect to fake:9000 (bucket 'bucket'): Connection refused");
      case Fault::kDenied:
        return PermissionDenied("access denied to bucket 'bucket' (InvalidAccessKeyId)");
      case Fault::kNoBucket:
        return NotFound("no such bucket 'bucket' at fake:9000");
    }
    return Status::Ok();
  }

  mutable std::mutex mu_;
  std::map<std::string, std::string> objects_;
  mutable std::string truncate_;
  mutable int truncate_times_ = 0;
  std::atomic<Fault> fault_{Fault::kNone};
  std::function<void(const std::string&)> before_get_;
};

}  // namespace inferd::testing
