// Model files given with a load call: Triton's model-file override, the
// load parameters "file:<version>/<path>" whose values are the files'
// contents. The model is then loaded from these files instead of the
// repository's. This file checks such a set (all of it, before anything is
// written) and writes it into a private directory that lives as long as the
// versions loaded from it.
//
// Paths are relative to the model directory and must name a file inside a
// version directory: "<version>/<path>", the version a decimal number
// without leading zeros, no component empty, "." or "..", no absolute path,
// no control characters or '\'. The directory is made with mkdtemp (mode
// 0700) under $TMPDIR (else /tmp), and every file and directory is created
// relative to it with O_EXCL/O_NOFOLLOW, so nothing is written outside it
// and no link is followed or created.
//
// Threading: CheckModelFiles is pure. A ModelFileDirectory is immutable once
// written; its destructor removes the directory tree (whoever drops the
// last shared_ptr: the model manager, the reaper, an in-flight request).
//
// Errors: CheckModelFiles answers INVALID_ARGUMENT naming the parameter
// ("file:<path>") and the problem; Write answers INTERNAL for a failure of
// the file system (the partial directory is removed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd {

// The prefix of a file parameter's name.
inline constexpr std::string_view kModelFilePrefix = "file:";

// Files by path relative to the model directory ("1/model.onnx"): contents.
using ModelFiles = std::map<std::string, std::string>;

// At most this many files in one load: the request size bounds the bytes,
// this bounds the files and directories a request can make the server
// create.
inline constexpr size_t kMaxModelFiles = 4096;

// Checks one path (the parameter name without "file:").
Status CheckModelFilePath(std::string_view path);

// Checks every path, that no path is both a file and a directory of another
// ("1/a" and "1/a/b"), and the count (kMaxModelFiles).
Status CheckModelFiles(const ModelFiles& files);

class ModelFileDirectory {
 public:
  // Writes `files` (already checked with CheckModelFiles) into a new
  // private directory.
  static StatusOr<std::shared_ptr<const ModelFileDirectory>> Write(const ModelFiles& files);

  ~ModelFileDirectory();
  ModelFileDirectory(const ModelFileDirectory&) = delete;
  ModelFileDirectory& operator=(const ModelFileDirectory&) = delete;

  // The directory (absolute, canonical): the model directory to load from.
  const std::string& path() const { return path_; }
  // The versions the files give (their first path components).
  const std::set<int64_t>& versions() const { return versions_; }

 private:
  ModelFileDirectory(std::string path, std::set<int64_t> versions)
      : path_(std::move(path)), versions_(std::move(versions)) {}

  const std::string path_;
  const std::set<int64_t> versions_;
};

}  // namespace inferd
