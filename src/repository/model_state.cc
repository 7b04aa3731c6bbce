#include "repository/model_state.h"

namespace inferd {

std::string_view ModelStateName(ModelState state) {
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
