#include "core/version_string.h"

#include <charconv>
#include <string>

#include "core/sanitize.h"

namespace inferd {

StatusOr<int64_t> ParseModelVersion(std::string_view version) {
  if (version.empty()) return int64_t{-1};
  int64_t v = 0;
  auto [p, ec] = std::from_chars(version.data(), version.data() + version.size(), v);
  if (ec != std::errc() || p != version.data() + version.size() || v < 0) {
    return InvalidArgument("failed to get model version from specified version string '" +
                           Bounded(version) +
                           "': a version is a non-negative integer, or empty for the latest");
  }
  return v;
}

}  // namespace inferd
