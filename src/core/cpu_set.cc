#include "core/cpu_set.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace inferd {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// A CPU number: decimal digits only, below kMaxCpus.
bool ParseCpu(const std::string& s, int& out) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out < kMaxCpus;
}

std::string Join(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

}  // namespace

CpuSet::CpuSet(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  std::sort(cpus_.begin(), cpus_.end());
  cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
}

bool CpuSet::contains(int cpu) const { return std::binary_search(cpus_.begin(), cpus_.end(), cpu); }

std::vector<int> CpuSet::Minus(const CpuSet& other) const {
  std::vector<int> out;
  std::set_difference(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                      std::back_inserter(out));
  return out;
}

CpuSet CpuSet::Intersect(const CpuSet& other) const {
  std::vector<int> out;
  std::set_intersection(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                        std::back_inserter(out));
  return CpuSet(std::move(out));
}

std::string CpuSet::ToString() const {
  std::string out;
  for (size_t i = 0; i < cpus_.size();) {
    size_t j = i;
    while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus_[i]);
    if (j > i) out += '-' + std::to_string(cpus_[j]);
    i = j + 1;
  }
  return out;
}

StatusOr<CpuSet> ParseCpuList(const std::string& text, const std::string& what) {
  const std::string t = Trim(text);
  auto bad = [&](const std::string& why) {
    return InvalidArgument(what + " expects a CPU list such as 0-3,8,10-11, got '" +
                           t.substr(0, 64) + "'" + (why.empty() ? "" : ": " + why));
  };
  if (t.empty()) return bad("");
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string::npos) comma = t.size();
    const std::string item = Trim(t.substr(start, comma - start));
    const size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      if (!ParseCpu(item, lo)) return bad("");
      hi = lo;
    } else if (!ParseCpu(Trim(item.substr(0, dash)), lo) ||
               !ParseCpu(Trim(item.substr(dash + 1)), hi)) {
      return bad("");
    } else if (hi < lo) {
      return bad("range " + item + " is reversed");
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    start = comma + 1;
  }
  return CpuSet(std::move(cpus));
}

StatusOr<CpuSetChoice> ParseCpuSetFlag(const std::string& value) {
  CpuSetChoice choice;
  const std::string v = Trim(value);
  if (strcasecmp(v.c_str(), "none") == 0) return choice;
  if (strcasecmp(v.c_str(), "auto") == 0) {
    choice.mode = CpuSetMode::kAuto;
    return choice;
  }
  auto list = ParseCpuList(v, "--cpu-set");
  if (!list.ok()) {
    // Something list-like: say what is wrong with the list.
    if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0]))) return list.status();
    return InvalidArgument("--cpu-set expects none, auto or a CPU list such as 0-3,8,10-11, got '" +
                           v.substr(0, 64) + "'");
  }
  choice.mode = CpuSetMode::kList;
  choice.list = std::move(*list);
  return choice;
}

StatusOr<CpuSet> ResolveCpuSet(const CpuSetChoice& choice, const CpuSet& allowed) {
  if (choice.mode != CpuSetMode::kList) return allowed;
  const std::vector<int> missing = choice.list.Minus(allowed);
  if (!missing.empty()) {
    return InvalidArgument(std::string("--cpu-set=") + choice.list.ToString() + ": CPU" +
                           (missing.size() > 1 ? "s " : " ") + Join(missing) +
                           (missing.size() > 1 ? " are" : " is") +
                           " not among the CPUs this process may use (" + allowed.ToString() +
                           "; its cgroup cpuset and affinity)");
  }
  return choice.list;
}

CoreGroups GroupByCore(const CpuSet& set, const std::map<int, int>& core_of) {
  std::map<int, std::vector<int>> by_key;  // key -> CPUs; a core's lowest CPU comes first
  for (int c : set.cpus()) {
    auto it = core_of.find(c);
    by_key[it == core_of.end() ? c : it->second].push_back(c);
  }
  CoreGroups cores;
  for (auto& [key, cpus] : by_key) cores.push_back(std::move(cpus));
  std::sort(cores.begin(), cores.end());  // by lowest CPU (each group is ascending)
  return cores;
}

CpuSet InstanceSlice(const CoreGroups& cores, size_t index, int active) {
  std::vector<int> all;
  for (const auto& core : cores) all.insert(all.end(), core.begin(), core.end());
  if (active < 1 || index >= static_cast<size_t>(active) || all.empty()) return CpuSet(all);
  const size_t k = static_cast<size_t>(active);
  // Part `index` of n items cut at i*n/k: contiguous parts covering them,
  // sizes floor or ceil of n/k; with n < k, one item each (shared).
  auto part = [&](size_t n) {
    size_t begin = index * n / k, end = (index + 1) * n / k;
    if (end == begin) end = begin + 1;
    begin = std::min(begin, n - 1);
    return std::make_pair(begin, std::min(end, n));
  };
  std::vector<int> slice;
  if (cores.size() >= k) {
    const auto [begin, end] = part(cores.size());
    for (size_t i = begin; i < end; ++i)
      slice.insert(slice.end(), cores[i].begin(), cores[i].end());
  } else {
    const auto [begin, end] = part(all.size());
    slice.assign(all.begin() + static_cast<std::ptrdiff_t>(begin),
                 all.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return CpuSet(std::move(slice));
}

}  // namespace inferd
