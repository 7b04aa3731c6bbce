#include "frontend/restricted_api.h"

#include <cctype>
#include <vector>

namespace inferd {
namespace {

constexpr std::array<std::string_view, kApiGroupCount> kNames = {
    "health",           "metadata",   "inference", "shared-memory", "model-config",
    "model-repository", "statistics", "trace",     "logging"};

constexpr std::string_view kGrpcPrefix = "triton-grpc-protocol-";

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t end = s.find(sep, pos);
    out.push_back(
        s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return out;
}

// Compares without an early exit, so the time taken does not tell how much
// of a guessed value was right (the length may show).
bool SameValue(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::optional<ApiGroup> ApiGroupFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<ApiGroup>(i);
  }
  return std::nullopt;
}

std::optional<ApiGroup> HttpApiGroup(std::string_view path) {
  std::vector<std::string_view> segs;
  for (auto s : Split(path, '/')) {
    if (!s.empty()) segs.push_back(s);
  }
  if (segs.empty() || segs[0] != "v2") return std::nullopt;
  if (segs.size() == 1) return ApiGroup::kMetadata;
  const std::string_view top = segs[1];
  if (top == "health") return ApiGroup::kHealth;
  if (top == "repository") return ApiGroup::kModelRepository;
  if (top == "systemsharedmemory" || top == "cudasharedmemory") return ApiGroup::kSharedMemory;
  if (top == "trace") return ApiGroup::kTrace;
  if (top == "logging") return ApiGroup::kLogging;
  if (top != "models" || segs.size() < 3) return std::nullopt;
  if (segs.size() == 3 && segs[2] == "stats") return ApiGroup::kStatistics;
  size_t i = 3;  // after /v2/models/<name>
  if (segs.size() > i + 1 && segs[i] == "versions") i += 2;
  if (segs.size() == i) return ApiGroup::kMetadata;
  const std::string_view action = segs[i];
  if (action == "infer" || action == "generate" || action == "generate_stream") {
    return ApiGroup::kInference;
  }
  if (action == "ready") return ApiGroup::kHealth;
  if (action == "config") return ApiGroup::kModelConfig;
  if (action == "stats") return ApiGroup::kStatistics;
  if (action == "trace") return ApiGroup::kTrace;
  return std::nullopt;
}

Status RestrictedApis::Add(const std::string& flag, std::string_view spec) {
  const std::string usage = "--" + flag + " expects <api>[,<api>...]:<key>=<value>";
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return InvalidArgument(usage + " (no ':')");
  const std::string_view groups = spec.substr(0, colon);
  const std::string_view kv = spec.substr(colon + 1);
  const size_t eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument(usage + " (no '<key>=')");
  }
  std::string key(kv.substr(0, eq));
  const std::string value(kv.substr(eq + 1));
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return InvalidArgument("--" + flag + ": the key may hold only letters, digits, '-' and '_'");
    }
  }
  if (grpc_) {
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    key = std::string(kGrpcPrefix) + key;
  }
  for (std::string_view name : Split(groups, ',')) {
    auto group = ApiGroupFromName(name);
    if (!group) {
      std::string known;
      for (auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
      return InvalidArgument("--" + flag + ": unknown API '" + std::string(name.substr(0, 64)) +
                             "' (known: " + known + ")");
    }
    auto& slot = rules_[static_cast<size_t>(*group)];
    if (slot) {
      return InvalidArgument("--" + flag + ": '" + std::string(name) +
                             "' is restricted more than once");
    }
    slot = Rule{key, value};
  }
  return Status::Ok();
}

bool RestrictedApis::empty() const {
  for (const auto& r : rules_) {
    if (r) return false;
  }
  return true;
}

const RestrictedApis::Rule* RestrictedApis::Find(ApiGroup group) const {
  const auto& r = rules_[static_cast<size_t>(group)];
  return r ? &*r : nullptr;
}

Status RestrictedApis::Check(
    ApiGroup group,
    const std::function<std::optional<std::string_view>(std::string_view key)>& header) const {
  const Rule* rule = Find(group);
  if (rule == nullptr) return Status::Ok();
  auto got = header(rule->key);
  if (got && SameValue(*got, rule->value)) return Status::Ok();
  return PermissionDenied("this API is restricted: the request needs the header '" + rule->key +
                          "' with the configured value (API group '" +
                          std::string(kNames[static_cast<size_t>(group)]) + "')");
}

}  // namespace inferd
