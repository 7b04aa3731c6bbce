#include "repository/model_cache_manifest.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "repository/repository_scan.h"

namespace inferd {
namespace {

constexpr char kHeader[] = "inferd-model-cache 1";

std::string Escape(const std::string& s) {
  if (s.empty()) return "-";
  std::string out;
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7f || c == '%') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> Unescape(const std::string& s) {
  if (s == "-") return std::string();
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= s.size()) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
    if (ec != std::errc() || p != s.data() + i + 3) return std::nullopt;
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

}  // namespace

std::optional<ModelCacheManifest> ReadModelCacheManifest(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) return std::nullopt;
  if (!std::getline(in, line) || line.rfind("generation ", 0) != 0) return std::nullopt;
  ModelCacheManifest m;
  m.generation = ParseVersionName(line.substr(11)).value_or(0);
  if (m.generation <= 0) return std::nullopt;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string etag, size, file;
    if (!(fields >> etag >> size >> file)) return std::nullopt;
    auto e = Unescape(etag);
    auto p = Unescape(file);
    auto n = ParseVersionName(size);
    if (!e || !p || !n) return std::nullopt;
    m.entries[*p] = ManifestEntry{*e, static_cast<uint64_t>(*n)};
  }
  return m;
}

bool WriteModelCacheManifest(const std::string& path, const ModelCacheManifest& manifest) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kHeader << "\ngeneration " << manifest.generation << "\n";
    for (const auto& [file, entry] : manifest.entries) {
      out << Escape(entry.etag) << ' ' << entry.size << ' ' << Escape(file) << '\n';
    }
    out.close();
    if (!out) return false;
  }
  return std::rename(temp.c_str(), path.c_str()) == 0;
}

std::optional<int64_t> GenerationOf(const std::string& name) {
  if (name.size() < 2 || name[0] != 'g') return std::nullopt;
  std::string digits = name.substr(1);
  const std::string partial = ".partial";
  if (digits.size() > partial.size() &&
      digits.compare(digits.size() - partial.size(), partial.size(), partial) == 0) {
    digits.resize(digits.size() - partial.size());
  }
  return ParseVersionName(digits);
}

}  // namespace inferd
