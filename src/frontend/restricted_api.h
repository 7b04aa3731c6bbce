// Restricted APIs (docs/security.md): groups of endpoints that answer only
// requests carrying a configured header (HTTP) or metadata entry (gRPC) with
// a configured value, as Triton's --http-restricted-api and
// --grpc-restricted-protocol. Protocol-neutral: the front ends say which
// group a request belongs to and how to read its headers.
//
// Flag value: "<group>[,<group>...]:<key>=<value>"; the flag may be repeated
// with different keys, and a group may be restricted only once. On gRPC the
// metadata key is "triton-grpc-protocol-<key>" (Triton's prefix), lower-case.
//
// Threading: configured once at start-up, then read-only (any thread).
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd {

enum class ApiGroup {
  kHealth,
  kMetadata,
  kInference,
  kSharedMemory,
  kModelConfig,
  kModelRepository,
  kStatistics,
  kTrace,
  kLogging,
};
inline constexpr size_t kApiGroupCount = 9;

// "health", "metadata", ... ; nullopt for anything else.
std::optional<ApiGroup> ApiGroupFromName(std::string_view name);

// The group of an HTTP request path (/v2/...); nullopt for paths outside
// every group (they are answered 404 anyway).
std::optional<ApiGroup> HttpApiGroup(std::string_view path);

class RestrictedApis {
 public:
  struct Rule {
    std::string key;  // header name as configured (gRPC: with the prefix)
    std::string value;
  };

  // `grpc`: keys get the gRPC metadata prefix. Errors name `flag`.
  explicit RestrictedApis(bool grpc = false) : grpc_(grpc) {}

  // Parses and adds one flag value; INVALID_ARGUMENT names the problem.
  Status Add(const std::string& flag, std::string_view spec);

  bool empty() const;
  const Rule* Find(ApiGroup group) const;

  // OK when `group` is not restricted or `header(key)` returns the
  // configured value; otherwise PERMISSION_DENIED naming the header (never
  // the expected value). `header` returns nullopt for a missing header.
  Status Check(
      ApiGroup group,
      const std::function<std::optional<std::string_view>(std::string_view key)>& header) const;

 private:
  bool grpc_;
  std::array<std::optional<Rule>, kApiGroupCount> rules_;
};

}  // namespace inferd
