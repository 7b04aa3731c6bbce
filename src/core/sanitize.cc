#include "core/sanitize.h"

#include <algorithm>

namespace inferd {

std::string EscapeControl(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string Bounded(std::string_view s, size_t max) {
  if (s.size() <= max) return EscapeControl(s);
  return EscapeControl(s.substr(0, max)) + "...(" + std::to_string(s.size()) + " bytes)";
}

std::string BoundMessage(std::string_view message) {
  if (message.size() <= kMaxErrorMessageBytes) return std::string(message);
  return std::string(message.substr(0, kMaxErrorMessageBytes)) + "...(truncated)";
}

std::string RedactPaths(std::string message, const std::vector<std::string>& paths,
                        std::string_view placeholder) {
  // Longest first, so a path inside another is not half-replaced.
  std::vector<std::string> sorted;
  for (const auto& p : paths) {
    std::string t = p;
    while (t.size() > 1 && t.back() == '/') t.pop_back();
    if (t.size() > 1) sorted.push_back(std::move(t));
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& p : sorted) {
    size_t pos = 0;
    while ((pos = message.find(p, pos)) != std::string::npos) {
      message.replace(pos, p.size(), placeholder);
      pos += placeholder.size();
    }
  }
  return message;
}

}  // namespace inferd
