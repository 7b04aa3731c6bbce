// The on-disk record of a cached remote model (S3RepositorySource): which
// generation directory is current and, per file, the ETag and size it was
// downloaded with, so that a restarted server reuses what is unchanged.
//
//   inferd-model-cache 1
//   generation <N>
//   <etag> <size> <relative path>        one line per file
//
// Fields are %XX-escaped (keys may hold spaces and newlines); an empty ETag
// is written "-". Generation directories are named "g<N>", and "g<N>.partial"
// while they are built.
//
// Thread-safety: pure functions and plain values; the caller serialises
// writes of one manifest. Errors: a manifest that is missing or does not
// parse reads as nullopt (the model is downloaded again); a write that fails
// returns false (it costs a download after a restart, nothing now).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace inferd {

struct ManifestEntry {
  std::string etag;
  uint64_t size = 0;
  bool operator==(const ManifestEntry&) const = default;
};
using ManifestEntries = std::map<std::string, ManifestEntry>;  // relative path -> entry

struct ModelCacheManifest {
  int64_t generation = 0;  // > 0
  ManifestEntries entries;
};

std::optional<ModelCacheManifest> ReadModelCacheManifest(const std::string& path);

// Written to "<path>.tmp", then renamed over `path`.
bool WriteModelCacheManifest(const std::string& path, const ModelCacheManifest& manifest);

// N of a generation directory's name ("g<N>" or "g<N>.partial").
std::optional<int64_t> GenerationOf(const std::string& directory_name);

}  // namespace inferd
