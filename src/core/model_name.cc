#include "core/model_name.h"

namespace inferd {

bool IsValidModelName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char ch : name) {
    if (ch == '/' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      return false;
    }
  }
  return name.find("..") == std::string_view::npos;
}

}  // namespace inferd
