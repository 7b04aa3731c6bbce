// Applying --cpu-set on Linux (docs/operations.md, "CPU pinning and NUMA"):
// the CPUs the process may use, the process-wide placement decided at start,
// and the calls instance threads make to name and pin themselves.
//
// Which threads go where, when the placement pins (--cpu-set=auto or a list):
// main restricts itself to the set before any other thread exists, so every
// thread inherits it (I/O, gRPC, metrics, loaders, housekeeping); a model
// instance's thread pins itself to the whole set when it starts and, for a
// model under the automatic layout, to its own slice of the set
// (InstanceSlice) before each execution under a new layout. Threads a backend
// creates from an instance thread (intra-op pools, OpenMP teams) inherit that
// thread's affinity at creation.
//
// Threading: SetCpuPlacement once, from main, before other threads start;
// everything else from any thread. Errors: AllowedCpus and PinCurrentThread
// return the system call's; the instance-thread calls log a warning and leave
// the thread as it was.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/cpu_set.h"
#include "core/status.h"

namespace inferd {

// The CPUs the calling thread may run on (sched_getaffinity): in a container,
// its cgroup's cpuset (the static CPU manager's exclusive cores), narrowed by
// any taskset.
StatusOr<CpuSet> AllowedCpus();

// The effective cpuset of this process's cgroup (cgroup v2:
// <cgroup_root>/<path from /proc/self/cgroup>/cpuset.cpus.effective), or
// nullopt where there is none to read. For the start-up log only.
std::optional<CpuSet> CgroupCpus(const std::string& cgroup_root = "/sys/fs/cgroup");

// CPU -> a key shared by the hyper-threads of its core (the lowest CPU of
// <sysfs_root>/devices/system/cpu/cpu<N>/topology/thread_siblings_list), for
// the CPUs of `set` whose file can be read.
std::map<int, int> CoreKeys(const CpuSet& set, const std::string& sysfs_root = "/sys");

// Sets the calling thread's affinity.
Status PinCurrentThread(const CpuSet& set);

// Names the calling thread (its first 15 bytes: /proc/<pid>/task/<tid>/comm).
void NameCurrentThread(const std::string& name);

struct CpuPlacement {
  CpuSet set;        // the CPUs; its size sizes thread layouts
  bool pin = false;  // whether instance threads are pinned
  CoreGroups cores;  // `set` by physical core (CoreKeys), for the slices
};

// Set once by main, before other threads start (reads the cores' topology).
void SetCpuPlacement(CpuSet set, bool pin);
// The placement; before SetCpuPlacement (unit tests, tools): the allowed
// CPUs, not pinned.
CpuPlacement CurrentCpuPlacement();
// The size of the placement's set (>= 1): what the automatic instance layout
// and the backends' default thread counts take as "the hardware threads".
int ServerCpuCount();

// The name of instance `index`'s thread: "inst<index>:<model>", cut to 15 bytes.
std::string InstanceThreadName(const std::string& model, size_t index);

// At the start of instance `index`'s thread: names it and, when pinning,
// pins it to the whole set.
void StartInstanceThread(const std::string& model, size_t index);

// Before an execution of instance `index` when the automatic layout has
// `active` instances taking batches (and that changed since the thread last
// pinned): when pinning, pins it to InstanceSlice(cores, index, active).
void PinInstanceSlice(const std::string& model, size_t index, int active);

}  // namespace inferd
