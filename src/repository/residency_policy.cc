#include "repository/residency_policy.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace inferd {

EvictionChoice ChooseEvictions(const std::vector<ResidentModel>& resident, uint64_t budget,
                               uint64_t incoming, const std::string& exclude) {
  uint64_t total = incoming;
  uint64_t busy = 0;  // evictable once idle
  std::vector<const ResidentModel*> candidates;
  for (const auto& m : resident) {
    total += m.bytes;
    if (m.name == exclude || m.pinned || m.protected_explicit) continue;
    if (m.leases > 0) {
      busy += m.bytes;
      continue;
    }
    candidates.push_back(&m);
  }
  // Oldest use first; names break ties so that the choice is reproducible.
  std::sort(candidates.begin(), candidates.end(), [](const auto* a, const auto* b) {
    return a->last_use != b->last_use ? a->last_use < b->last_use : a->name < b->name;
  });
  EvictionChoice out;
  for (const auto* m : candidates) {
    if (total <= budget) break;
    out.victims.push_back(m->name);
    total -= m->bytes;
  }
  out.fits = total <= budget;
  out.fits_when_idle = total - std::min(total, busy) <= budget;
  return out;
}

uint64_t EstimateFootprint(const std::map<std::string, uint64_t>& known,
                           const std::vector<uint64_t>& recent, const std::string& name) {
  if (auto it = known.find(name); it != known.end()) return it->second;
  uint64_t largest = 0;
  for (uint64_t bytes : recent) largest = std::max(largest, bytes);
  return largest;
}

uint64_t Footprint(int64_t heap_before, int64_t heap_after, uint64_t file_bytes,
                   uint64_t device_bytes) {
  const uint64_t heap =
      heap_after > heap_before ? static_cast<uint64_t>(heap_after - heap_before) : 0;
  return std::max(heap, file_bytes) + device_bytes;
}

std::string TooLargeReason(const std::string& name, uint64_t footprint, uint64_t budget) {
  return "model '" + name + "' needs " + std::to_string(footprint) +
         " bytes, more than the whole --model-memory-budget of " + std::to_string(budget) +
         " bytes";
}

StatusOr<uint64_t> ParseByteSize(const std::string& flag, const std::string& value) {
  auto bad = [&] {
    return InvalidArgument("--" + flag +
                           " expects a positive number of bytes, optionally with a suffix K, M, "
                           "G or T (powers of 1024), got '" +
                           value + "'");
  };
  size_t digits = 0;
  while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits]))) {
    ++digits;
  }
  if (digits == 0 || digits > 19) return bad();
  const uint64_t n = std::stoull(value.substr(0, digits));
  std::string suffix = value.substr(digits);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  static const std::map<std::string, int> kShifts = {
      {"", 0},    {"B", 0},    {"K", 10},  {"KB", 10},  {"KI", 10}, {"KIB", 10},
      {"M", 20},  {"MB", 20},  {"MI", 20}, {"MIB", 20}, {"G", 30},  {"GB", 30},
      {"GI", 30}, {"GIB", 30}, {"T", 40},  {"TB", 40},  {"TI", 40}, {"TIB", 40}};
  auto it = kShifts.find(suffix);
  if (it == kShifts.end()) return bad();
  shift = it->second;
  if (n == 0 || n > (std::numeric_limits<uint64_t>::max() >> shift)) return bad();
  return n << shift;
}

StatusOr<bool> ParseResidencyParameter(const std::string& value) {
  if (value == "pinned") return true;
  if (value.empty() || value == "lru") return false;
  return InvalidArgument("parameter 'residency' must be \"pinned\" or \"lru\", got '" + value +
                         "'");
}

}  // namespace inferd
