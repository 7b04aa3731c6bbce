#include "core/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/log.h"

namespace inferd {
namespace {

struct CpuMask {
  CpuMask() : set(CPU_ALLOC(kMaxCpus)), bytes(CPU_ALLOC_SIZE(kMaxCpus)) { CPU_ZERO_S(bytes, set); }
  ~CpuMask() { CPU_FREE(set); }
  CpuMask(const CpuMask&) = delete;
  CpuMask& operator=(const CpuMask&) = delete;
  cpu_set_t* set;
  size_t bytes;
};

std::mutex placement_mu;
std::optional<CpuPlacement> placement;  // guarded by placement_mu

}  // namespace

StatusOr<CpuSet> AllowedCpus() {
  CpuMask mask;
  if (sched_getaffinity(0, mask.bytes, mask.set) != 0) {
    return Internal(std::string("sched_getaffinity: ") + strerror(errno));
  }
  std::vector<int> cpus;
  for (int c = 0; c < kMaxCpus; ++c) {
    if (CPU_ISSET_S(c, mask.bytes, mask.set)) cpus.push_back(c);
  }
  return CpuSet(std::move(cpus));
}

std::optional<CpuSet> CgroupCpus(const std::string& cgroup_root) {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);  // the cgroup v2 entry
  }
  if (path.empty()) return std::nullopt;
  std::ifstream f(cgroup_root + path + (path.back() == '/' ? "" : "/") + "cpuset.cpus.effective");
  std::stringstream text;
  if (!(text << f.rdbuf())) return std::nullopt;
  auto set = ParseCpuList(text.str(), "cpuset.cpus.effective");
  if (!set.ok()) return std::nullopt;
  return *set;
}

std::map<int, int> CoreKeys(const CpuSet& set, const std::string& sysfs_root) {
  std::map<int, int> keys;
  for (int c : set.cpus()) {
    std::ifstream f(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(c) +
                    "/topology/thread_siblings_list");
    std::stringstream text;
    if (!(text << f.rdbuf())) continue;
    auto siblings = ParseCpuList(text.str(), "thread_siblings_list");
    if (siblings.ok() && siblings->contains(c)) keys[c] = siblings->cpus().front();
  }
  return keys;
}

Status PinCurrentThread(const CpuSet& set) {
  CpuMask mask;
  for (int c : set.cpus()) CPU_SET_S(c, mask.bytes, mask.set);
  if (int err = pthread_setaffinity_np(pthread_self(), mask.bytes, mask.set); err != 0) {
    return Internal("pinning a thread to CPUs " + set.ToString() + ": " + strerror(err));
  }
  return Status::Ok();
}

void NameCurrentThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

void SetCpuPlacement(CpuSet set, bool pin) {
  CoreGroups cores = GroupByCore(set, CoreKeys(set));
  std::lock_guard<std::mutex> lock(placement_mu);
  placement = CpuPlacement{std::move(set), pin, std::move(cores)};
}

CpuPlacement CurrentCpuPlacement() {
  std::lock_guard<std::mutex> lock(placement_mu);
  if (!placement) {
    auto allowed = AllowedCpus();
    CpuSet set = allowed.ok() ? *allowed : CpuSet();
    CoreGroups cores = GroupByCore(set, CoreKeys(set));
    placement = CpuPlacement{std::move(set), false, std::move(cores)};
  }
  return *placement;
}

int ServerCpuCount() { return std::max(1, static_cast<int>(CurrentCpuPlacement().set.size())); }

std::string InstanceThreadName(const std::string& model, size_t index) {
  return ("inst" + std::to_string(index) + ":" + model).substr(0, 15);
}

void StartInstanceThread(const std::string& model, size_t index) {
  NameCurrentThread(InstanceThreadName(model, index));
  const CpuPlacement p = CurrentCpuPlacement();
  if (!p.pin) return;
  if (Status s = PinCurrentThread(p.set); !s.ok()) INFERD_LOG(Warning) << s.message();
}

void PinInstanceSlice(const std::string& model, size_t index, int active) {
  const CpuPlacement p = CurrentCpuPlacement();
  if (!p.pin) return;
  const CpuSet slice = InstanceSlice(p.cores, index, active);
  if (Status s = PinCurrentThread(slice); !s.ok()) {
    INFERD_LOG(Warning) << s.message();
    return;
  }
  INFERD_VLOG(1) << "model '" << model << "' instance " << index << " (" << active
                 << " active): CPUs " << slice.ToString();
}

}  // namespace inferd
