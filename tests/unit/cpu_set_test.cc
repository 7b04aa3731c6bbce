// --cpu-set: the cpulist syntax, the flag's modes, the check against the
// allowed CPUs, the automatic layout's slices (core/cpu_set.h), and the
// Linux calls of core/cpu_affinity.h on this machine.
#include "core/cpu_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "core/cpu_affinity.h"
#include "server/command_line.h"

namespace inferd {
namespace {

std::vector<int> Parse(const std::string& text) {
  auto s = ParseCpuList(text, "--cpu-set");
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().message();
  return s.ok() ? s->cpus() : std::vector<int>{};
}

std::string Error(const std::string& text) {
  auto s = ParseCpuList(text, "--cpu-set");
  EXPECT_FALSE(s.ok()) << "'" << text << "' parsed";
  return s.ok() ? std::string() : s.status().message();
}

TEST(CpuListTest, ParsesTheLinuxSyntax) {
  EXPECT_EQ(Parse("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(Parse("1"), (std::vector<int>{1}));
  EXPECT_EQ(Parse("5-5"), (std::vector<int>{5}));
  EXPECT_EQ(Parse("2-3\n"), (std::vector<int>{2, 3}));  // a sysfs file's text
  EXPECT_EQ(Parse(" 3 , 1-2 "), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(Parse("3,1,3,2-3"), (std::vector<int>{1, 2, 3}));  // sorted, no duplicates
  EXPECT_EQ(Parse("4095"), (std::vector<int>{4095}));
}

TEST(CpuListTest, RefusesEverythingElse) {
  for (const char* bad : {"", " ", ",", "1,", ",1", "1,,2", "a", "1-", "-1", "1-2-3", "0x1", "+1",
                          "1.5", "4096", "0-4096", "99999999999999999999", "1 2"}) {
    EXPECT_NE(Error(bad).find("--cpu-set"), std::string::npos) << bad;
  }
  EXPECT_NE(Error("3-1").find("reversed"), std::string::npos);
}

TEST(CpuListTest, FormatsCanonically) {
  for (const char* text : {"0-3,8,10-11", "1", "0,2,4", "0-1", "7-9,11"}) {
    auto s = ParseCpuList(text, "x");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->ToString(), text);
  }
  EXPECT_EQ(CpuSet({9, 8, 1, 0, 2}).ToString(), "0-2,8-9");
  EXPECT_EQ(CpuSet().ToString(), "");
}

TEST(CpuSetFlagTest, Modes) {
  auto none = ParseCpuSetFlag("none");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mode, CpuSetMode::kNone);
  auto automatic = ParseCpuSetFlag("AUTO");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->mode, CpuSetMode::kAuto);
  auto list = ParseCpuSetFlag("0-1,4");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->mode, CpuSetMode::kList);
  EXPECT_EQ(list->list.cpus(), (std::vector<int>{0, 1, 4}));
  for (const char* bad : {"", "all", "automatic", "cpu0", "1-0", "0,,1"}) {
    auto r = ParseCpuSetFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--cpu-set"), std::string::npos) << r.status().message();
  }
  EXPECT_NE(ParseCpuSetFlag("all").status().message().find("none, auto or a CPU list"),
            std::string::npos);
}

TEST(CpuSetFlagTest, ThroughTheCommandLine) {
  auto cl = ParseCommandLine({"--model-repository=/m", "--cpu-set", "2-3"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->cpu_set.mode, CpuSetMode::kList);
  EXPECT_EQ(cl->cpu_set.list.ToString(), "2-3");
  auto plain = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->cpu_set.mode, CpuSetMode::kNone);  // the default changes nothing
  auto bad = ParseCommandLine({"--model-repository=/m", "--cpu-set=some"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--cpu-set"), std::string::npos);
  EXPECT_NE(CommandLineUsage().find("--cpu-set=<set>"), std::string::npos);
}

TEST(ResolveCpuSetTest, AListMustBeAllowed) {
  const CpuSet allowed({1, 2, 3, 8});
  auto ok = ResolveCpuSet(*ParseCpuSetFlag("2-3"), allowed);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->ToString(), "2-3");
  auto one = ResolveCpuSet(*ParseCpuSetFlag("0-1"), allowed);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("CPU 0 is not among"), std::string::npos)
      << one.status().message();
  EXPECT_NE(one.status().message().find("1-3,8"), std::string::npos);  // what is allowed
  auto two = ResolveCpuSet(*ParseCpuSetFlag("0,4-5,8"), allowed);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("CPUs 0,4,5 are"), std::string::npos)
      << two.status().message();
}

TEST(ResolveCpuSetTest, NoneAndAutoAreTheAllowedSet) {
  const CpuSet allowed({4, 5, 6, 7});
  EXPECT_EQ(*ResolveCpuSet(*ParseCpuSetFlag("none"), allowed), allowed);
  EXPECT_EQ(*ResolveCpuSet(*ParseCpuSetFlag("auto"), allowed), allowed);
}

// Every CPU a core of its own (no topology known).
CoreGroups Plain(const CpuSet& set) { return GroupByCore(set, {}); }

TEST(InstanceSliceTest, DisjointContiguousSlices) {
  const CpuSet set({2, 3, 8, 9});
  EXPECT_EQ(InstanceSlice(Plain(set), 0, 1), set);
  EXPECT_EQ(InstanceSlice(Plain(set), 0, 2).ToString(), "2-3");
  EXPECT_EQ(InstanceSlice(Plain(set), 1, 2).ToString(), "8-9");
  EXPECT_EQ(InstanceSlice(Plain(set), 3, 4).ToString(), "9");
  // Inactive instances and no layout: the whole set.
  EXPECT_EQ(InstanceSlice(Plain(set), 2, 2), set);
  EXPECT_EQ(InstanceSlice(Plain(set), 0, 0), set);
}

TEST(InstanceSliceTest, EveryLayoutTilesTheSet) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<int> cpus;
    for (int c = 0; c < n; ++c) cpus.push_back(10 + 2 * c);  // not contiguous numbers
    const CoreGroups cores = Plain(CpuSet(cpus));
    for (int k = 1; k <= n; ++k) {
      std::vector<int> seen;
      size_t smallest = SIZE_MAX, largest = 0;
      for (int i = 0; i < k; ++i) {
        const CpuSet s = InstanceSlice(cores, static_cast<size_t>(i), k);
        ASSERT_FALSE(s.empty()) << n << " CPUs, " << k << " instances, #" << i;
        smallest = std::min(smallest, s.size());
        largest = std::max(largest, s.size());
        seen.insert(seen.end(), s.cpus().begin(), s.cpus().end());
      }
      EXPECT_EQ(seen, cpus) << n << " CPUs, " << k << " instances: disjoint, in order, covering";
      EXPECT_LE(largest - smallest, 1u) << n << " CPUs, " << k << " instances";
    }
  }
}

TEST(InstanceSliceTest, MoreInstancesThanCpusShare) {
  const CpuSet set({0, 1});
  for (int i = 0; i < 5; ++i) {
    const CpuSet s = InstanceSlice(Plain(set), static_cast<size_t>(i), 5);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_TRUE(set.contains(s.cpus()[0]));
  }
}

TEST(InstanceSliceTest, HyperThreadsOfACoreStayTogether) {
  // 4 cores, hyper-threads N and N+32 (as on the reference node).
  const CpuSet set({2, 3, 4, 5, 34, 35, 36, 37});
  std::map<int, int> core_of;
  for (int c : {2, 3, 4, 5}) core_of[c] = core_of[c + 32] = c;
  const CoreGroups cores = GroupByCore(set, core_of);
  EXPECT_EQ(cores, (CoreGroups{{2, 34}, {3, 35}, {4, 36}, {5, 37}}));
  EXPECT_EQ(InstanceSlice(cores, 0, 2).ToString(), "2-3,34-35");
  EXPECT_EQ(InstanceSlice(cores, 1, 2).ToString(), "4-5,36-37");
  EXPECT_EQ(InstanceSlice(cores, 3, 4).ToString(), "5,37");
  // 3 instances on 4 cores: whole cores, 1 + 1 + 2.
  EXPECT_EQ(InstanceSlice(cores, 0, 3).ToString(), "2,34");
  EXPECT_EQ(InstanceSlice(cores, 1, 3).ToString(), "3,35");
  EXPECT_EQ(InstanceSlice(cores, 2, 3).ToString(), "4-5,36-37");
  // More instances than cores: single hyper-threads, in core order.
  EXPECT_EQ(InstanceSlice(cores, 0, 8).ToString(), "2");
  EXPECT_EQ(InstanceSlice(cores, 1, 8).ToString(), "34");
  EXPECT_EQ(InstanceSlice(cores, 7, 8).ToString(), "37");
}

TEST(CpuAffinityTest, ReadsTheCoresFromSysfs) {
  const auto root =
      std::filesystem::temp_directory_path() / ("cpu_topology_test_" + std::to_string(::getpid()));
  for (int c : {0, 1, 2, 3}) {
    const auto dir = root / ("devices/system/cpu/cpu" + std::to_string(c)) / "topology";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "thread_siblings_list") << (c % 2 == 0 ? "0,2\n" : "1,3\n");
  }
  const CpuSet set({0, 1, 2, 3, 9});  // CPU 9 has no file: a core of its own
  const auto keys = CoreKeys(set, root.string());
  EXPECT_EQ(keys, (std::map<int, int>{{0, 0}, {1, 1}, {2, 0}, {3, 1}}));
  EXPECT_EQ(GroupByCore(set, keys), (CoreGroups{{0, 2}, {1, 3}, {9}}));
  std::filesystem::remove_all(root);
  // This machine's own files parse (or are missing): every CPU of the set keeps a core.
  auto allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok());
  size_t cpus = 0;
  for (const auto& core : GroupByCore(*allowed, CoreKeys(*allowed))) cpus += core.size();
  EXPECT_EQ(cpus, allowed->size());
}

TEST(CpuAffinityTest, PinsTheCallingThreadOnly) {
  auto allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status().message();
  ASSERT_FALSE(allowed->empty());
  const CpuSet last({allowed->cpus().back()});
  CpuSet inside;
  std::thread t([&] {
    ASSERT_TRUE(PinCurrentThread(last).ok());
    NameCurrentThread(InstanceThreadName("a_model_with_a_long_name", 3));
    inside = *AllowedCpus();
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    EXPECT_STREQ(name, "inst3:a_model_w");
  });
  t.join();
  EXPECT_EQ(inside, last);
  EXPECT_EQ(*AllowedCpus(), *allowed);  // this thread is unchanged
  // A CPU the process may not use cannot be pinned to.
  EXPECT_FALSE(PinCurrentThread(CpuSet({kMaxCpus - 1})).ok());
}

TEST(CpuAffinityTest, PlacementDefaultsToTheAllowedCpus) {
  EXPECT_EQ(ServerCpuCount(), static_cast<int>(AllowedCpus()->size()));
  EXPECT_FALSE(CurrentCpuPlacement().pin);
}

TEST(CpuAffinityTest, ReadsTheCgroupCpuset) {
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty()) GTEST_SKIP() << "no cgroup v2 entry in /proc/self/cgroup";
  const auto root =
      std::filesystem::temp_directory_path() / ("cpu_set_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root.string() + path);
  std::ofstream(root.string() + path + "/cpuset.cpus.effective") << "2-3,6\n";
  const auto cpus = CgroupCpus(root.string());
  ASSERT_TRUE(cpus.has_value());
  EXPECT_EQ(cpus->ToString(), "2-3,6");
  std::ofstream(root.string() + path + "/cpuset.cpus.effective") << "garbage\n";
  EXPECT_FALSE(CgroupCpus(root.string()).has_value());
  std::filesystem::remove_all(root);
  EXPECT_FALSE(CgroupCpus(root.string()).has_value());
}

}  // namespace
}  // namespace inferd
