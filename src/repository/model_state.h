// The lifecycle state of a model version, as the manager keeps it. Converted
// to Triton's strings ("READY", "LOADING", ...) only where a protocol writes
// them (ModelStateName).
#pragma once

#include <string_view>

namespace inferd {

enum class ModelState {
  kUnknown,      // listed in a repository, never loaded (the index shows no state)
  kLoading,      // a load is in progress; an older version may still be serving
  kReady,        // serving
  kUnloading,    // taken out of service, draining
  kUnavailable,  // failed to load, or unloaded; the reason says which
};

// Triton's wire name: "" for kUnknown, else "LOADING", "READY", "UNLOADING",
// "UNAVAILABLE". Inline, so that encoders (and their fuzz targets) need no
// library for it.
constexpr std::string_view ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "LOADING";
    case ModelState::kReady:
      return "READY";
    case ModelState::kUnloading:
      return "UNLOADING";
    case ModelState::kUnavailable:
      return "UNAVAILABLE";
    case ModelState::kUnknown:
      break;
  }
  return "";
}

}  // namespace inferd
