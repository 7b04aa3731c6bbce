// The HTTP API's JSON bodies for metadata, health, statistics, the
// repository index and shared-memory status (PROTOCOL.md §1), encoded from
// the server's protocol-neutral values. Pure functions (no server, no
// sockets): unit-tested and fuzzed (fuzz/json_encode_fuzz.cc) on their own.
//
// Strings are written with their length (embedded NULs kept) and JSON
// escapes; bytes that are not UTF-8 are written as the text "\xNN"
// (core/utf8.h), so every body is strict JSON.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "repository/model_manager.h"
#include "server/inference_server.h"
#include "shm/cuda_shm_manager.h"
#include "shm/shm_manager.h"

namespace inferd::http {

// {"name": id, "version": version, "extensions": [...]}
std::string EncodeServerMetadata(std::string_view id, std::string_view version,
                                 const std::vector<std::string>& extensions);

// {"live": b} / {"ready": b}: `key` is "live" or "ready".
std::string EncodeHealth(std::string_view key, bool value);

// {"name": model, "ready": b}
std::string EncodeModelReady(std::string_view model, bool ready);

// {"name", "versions": [...], "platform", "inputs": [...], "outputs": [...]};
// each tensor {"name", "datatype", "shape"}.
std::string EncodeModelMetadata(const ModelMetadata& metadata);

// {"model_stats": [...]}, Triton's statistics extension layout (cache and
// response statistics empty: inferd has neither).
std::string EncodeStatistics(const std::vector<ModelStatistics>& stats);

// [{"name", "version"?, "state"?, "reason"?}, ...]: version when known,
// state when the model was ever loaded, reason when not empty.
std::string EncodeRepositoryIndex(const std::vector<ModelIndexEntry>& index);

// [{"name", "key", "offset", "byte_size"}, ...]
std::string EncodeSystemShmStatus(const std::vector<RegionStatus>& regions);

// [{"name", "device_id", "byte_size"}, ...]
std::string EncodeCudaShmStatus(const std::vector<CudaRegionStatus>& regions);

}  // namespace inferd::http
