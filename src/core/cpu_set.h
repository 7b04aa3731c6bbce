// CPU sets for inferd's --cpu-set (docs/operations.md, "CPU pinning and
// NUMA"): the Linux cpulist syntax ("0-3,8,10-11", as in
// /sys/fs/cgroup/cpuset.cpus.effective and `taskset -c`), the flag's modes,
// the set a mode resolves to against the CPUs the process may use, and the
// slice of a set an instance of the automatic layout runs on.
//
// Pure functions and a value type: no system calls (core/cpu_affinity.h
// reads and applies affinities). Safe to use from any thread. Errors are
// InvalidArgument and name the flag, or the CPU that is not allowed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace inferd {

// The highest CPU number a list may name (plus one): larger lists are refused.
inline constexpr int kMaxCpus = 4096;

// A set of CPU numbers, ascending and without duplicates.
class CpuSet {
 public:
  CpuSet() = default;
  // Any order, duplicates allowed; numbers must be in [0, kMaxCpus).
  explicit CpuSet(std::vector<int> cpus);

  const std::vector<int>& cpus() const { return cpus_; }
  size_t size() const { return cpus_.size(); }
  bool empty() const { return cpus_.empty(); }
  bool contains(int cpu) const;
  // The CPUs of this set that `other` lacks, ascending.
  std::vector<int> Minus(const CpuSet& other) const;
  // The CPUs in both sets.
  CpuSet Intersect(const CpuSet& other) const;
  // Canonical cpulist text: "0-3,8,10-11"; "" for an empty set.
  std::string ToString() const;

  bool operator==(const CpuSet& o) const { return cpus_ == o.cpus_; }

 private:
  std::vector<int> cpus_;
};

// Parses cpulist text ("0-3,8,10-11"; whitespace around items and a trailing
// newline are accepted, as sysfs files end with one). Empty text, a reversed
// range, a number >= kMaxCpus or anything else is an error mentioning
// `what` (e.g. "--cpu-set").
StatusOr<CpuSet> ParseCpuList(const std::string& text, const std::string& what);

// What --cpu-set asks for.
enum class CpuSetMode {
  kNone,  // default: no affinity changes (layouts still sized by the allowed CPUs)
  kAuto,  // the CPUs the process may use (its cgroup cpuset, taskset), pinned
  kList,  // the given CPUs, which must all be allowed, pinned
};

struct CpuSetChoice {
  CpuSetMode mode = CpuSetMode::kNone;
  CpuSet list;  // kList only
};

// Parses the flag's value: none, auto (any case) or a cpulist. Errors name
// --cpu-set.
StatusOr<CpuSetChoice> ParseCpuSetFlag(const std::string& value);

// The set the server uses: kNone and kAuto give `allowed`; kList gives the
// list, an error naming every listed CPU that `allowed` lacks. `allowed`
// must not be empty.
StatusOr<CpuSet> ResolveCpuSet(const CpuSetChoice& choice, const CpuSet& allowed);

// The CPUs of a set grouped by physical core (the hyper-threads of one core
// together), cores in the order of their lowest CPU.
using CoreGroups = std::vector<std::vector<int>>;

// Groups `set` by core. `core_of` maps a CPU to a key its core's CPUs share
// (core/cpu_affinity.h: the lowest CPU of sysfs thread_siblings_list); a CPU
// it lacks is a core of its own.
CoreGroups GroupByCore(const CpuSet& set, const std::map<int, int>& core_of);

// The slice for instance `index` when the first `active` instances of an
// automatic layout take batches: with at least `active` cores, the cores cut
// into `active` contiguous, disjoint parts (sizes differ by at most one
// core), so that no two instances share a core; with fewer cores, the CPUs
// (in core order) cut the same way, neighbours sharing a CPU when there are
// more instances than CPUs. An index at or past `active` (an inactive
// instance), or active < 1, gets every CPU.
CpuSet InstanceSlice(const CoreGroups& cores, size_t index, int active);

}  // namespace inferd
