// The static, hosts-file and DNS sources (an injected resolver: no real
// DNS) and HostUnion. Waits are conditions with deadlines, never sleeps
// that a slow machine could outrun.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "discovery/dns_host_source.h"
#include "discovery/host_union.h"
#include "discovery/hosts_file_source.h"
#include "discovery/static_host_source.h"
#include "source_test_util.h"

namespace inferd::discovery {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;
using testing::Set;
using testing::SetRecorder;
using testing::Str;

constexpr std::chrono::milliseconds kFast(10);

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "host_sources_test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void Write(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << content;
  fs::rename(tmp, path);  // atomically, as a careful writer does
}

TEST(StaticHostSource, ReportsOnceInStart) {
  StaticHostSource s(Set({"a:1", "b:2"}));
  SetRecorder r;
  s.Start(r.Callback());
  EXPECT_EQ(r.calls(), 1);
  EXPECT_EQ(r.last(), Set({"a:1", "b:2"}));
  s.Stop();
  EXPECT_EQ(s.errors(), 0u);
  EXPECT_EQ(s.name(), "static:a:1,b:2");
}

TEST(HostsFileSource, ReloadsAddsAndRemoves) {
  TempDir dir;
  std::string path = dir / "hosts";
  Write(path, "a:1\nb:2\n");
  HostsFileSource s(path, kFast);
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"a:1", "b:2"}))) << Str(r.last());
  Write(path, "a:1\nb:2\n# new\nc:3\n");
  ASSERT_TRUE(r.WaitFor(Set({"a:1", "b:2", "c:3"}))) << Str(r.last());
  Write(path, "c:3\n");
  ASSERT_TRUE(r.WaitFor(Set({"c:3"}))) << Str(r.last());
  Write(path, "");
  ASSERT_TRUE(r.WaitFor(HostSet())) << Str(r.last());
  s.Stop();
  EXPECT_EQ(s.errors(), 0u);
}

TEST(HostsFileSource, BadLineOrMissingFileKeepsTheLastSet) {
  TempDir dir;
  std::string path = dir / "hosts";
  Write(path, "a:1\n");
  HostsFileSource s(path, kFast);
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"a:1"})));
  int calls = r.calls();

  Write(path, "a:1\nb:2\nthis is not a host\n");
  ASSERT_TRUE(Eventually([&] { return s.errors() >= 3; }));
  EXPECT_EQ(r.last(), Set({"a:1"}));
  EXPECT_EQ(r.calls(), calls);

  fs::remove(path);
  uint64_t errors = s.errors();
  ASSERT_TRUE(Eventually([&] { return s.errors() >= errors + 3; }));
  EXPECT_EQ(r.last(), Set({"a:1"}));
  EXPECT_EQ(r.calls(), calls);

  Write(path, "b:2\n");
  ASSERT_TRUE(r.WaitFor(Set({"b:2"})));
  s.Stop();
}

TEST(HostsFileSource, MissingAtStartReportsNothingUntilItAppears) {
  TempDir dir;
  std::string path = dir / "hosts";
  HostsFileSource s(path, kFast);
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(Eventually([&] { return s.errors() >= 2; }));
  EXPECT_EQ(r.calls(), 0);
  Write(path, "a:1\n");
  ASSERT_TRUE(r.WaitFor(Set({"a:1"})));
  s.Stop();
}

// A Kubernetes ConfigMap volume: hosts -> ..data/hosts, ..data -> a
// timestamped directory, replaced by renaming a new ..data link over it.
TEST(HostsFileSource, FollowsAConfigMapSymlinkSwap) {
  TempDir dir;
  fs::create_directory(dir / "..2024_01_01_v1");
  std::ofstream(dir / "..2024_01_01_v1/hosts") << "a:1\n";
  fs::create_directory_symlink("..2024_01_01_v1", dir / "..data");
  fs::create_symlink("..data/hosts", dir / "hosts");
  HostsFileSource s(dir / "hosts", kFast);
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"a:1"})));

  fs::create_directory(dir / "..2024_01_01_v2");
  std::ofstream(dir / "..2024_01_01_v2/hosts") << "a:1\nb:2\n";
  fs::create_directory_symlink("..2024_01_01_v2", dir / "..data_tmp");
  fs::rename(dir / "..data_tmp", dir / "..data");
  fs::remove_all(dir / "..2024_01_01_v1");
  ASSERT_TRUE(r.WaitFor(Set({"a:1", "b:2"}))) << Str(r.last());
  s.Stop();
  EXPECT_EQ(s.errors(), 0u);
}

TEST(HostsFileSource, SeesAnEditThatKeepsSizeAndMtime) {
  TempDir dir;
  std::string path = dir / "hosts";
  std::ofstream(path) << "a:1\n";
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  HostsFileSource s(path, kFast);
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"a:1"})));
  std::ofstream(path, std::ios::trunc) << "b:1\n";  // in place: same inode and size
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  ASSERT_TRUE(r.WaitFor(Set({"b:1"})));
  s.Stop();
}

// A resolver whose answer the test changes; counts its calls.
class FakeResolver {
 public:
  void Answer(DnsAnswer a) {
    MutexLock lock(mu_);
    answer_ = std::move(a);
  }
  int calls() {
    MutexLock lock(mu_);
    return calls_;
  }
  DnsResolver resolver() {
    return [this](const std::string& name) {
      MutexLock lock(mu_);
      ++calls_;
      EXPECT_EQ(name, "inferd.prod.svc");
      return answer_;
    };
  }

 private:
  Mutex mu_;
  DnsAnswer answer_ INFERD_GUARDED_BY(mu_);
  int calls_ INFERD_GUARDED_BY(mu_) = 0;
};

DnsAnswer Addresses(std::vector<std::string> a) {
  return DnsAnswer{DnsAnswer::Kind::kAddresses, std::move(a), ""};
}

TEST(DnsHostSource, ReResolvesAndReportsChanges) {
  FakeResolver fake;
  fake.Answer(Addresses({"10.0.0.1", "10.0.0.2", "10.0.0.1"}));
  DnsHostSource s(*ParseHostEndpoint("inferd.prod.svc:8001"), kFast, fake.resolver());
  EXPECT_EQ(s.name(), "dns:inferd.prod.svc:8001");
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"10.0.0.1:8001", "10.0.0.2:8001"})));
  fake.Answer(Addresses({"10.0.0.2", "fd00::7"}));
  ASSERT_TRUE(r.WaitFor(Set({"10.0.0.2:8001", "[fd00::7]:8001"}))) << Str(r.last());
  s.Stop();
  EXPECT_EQ(s.errors(), 0u);
}

TEST(DnsHostSource, TransientFailureKeepsTheSetNoSuchNameEmptiesIt) {
  FakeResolver fake;
  fake.Answer(Addresses({"10.0.0.1"}));
  DnsHostSource s(*ParseHostEndpoint("inferd.prod.svc:8001"), kFast, fake.resolver());
  SetRecorder r;
  s.Start(r.Callback());
  ASSERT_TRUE(r.WaitFor(Set({"10.0.0.1:8001"})));
  int calls = r.calls();

  fake.Answer(DnsAnswer{DnsAnswer::Kind::kTransient, {}, "Temporary failure in name resolution"});
  ASSERT_TRUE(Eventually([&] { return s.errors() >= 3; }));
  EXPECT_EQ(r.last(), Set({"10.0.0.1:8001"}));
  EXPECT_EQ(r.calls(), calls);

  // A headless Service whose pods are all gone: NXDOMAIN -> no hosts.
  uint64_t errors = s.errors();
  fake.Answer(DnsAnswer{DnsAnswer::Kind::kNoSuchName, {}, "Name or service not known"});
  ASSERT_TRUE(r.WaitFor(HostSet()));
  int resolves = fake.calls();
  ASSERT_TRUE(Eventually([&] { return fake.calls() >= resolves + 3; }));
  EXPECT_EQ(s.errors(), errors);  // an answer, not a failure
  EXPECT_EQ(r.calls(), calls + 1);

  fake.Answer(Addresses({"10.0.0.3"}));
  ASSERT_TRUE(r.WaitFor(Set({"10.0.0.3:8001"})));
  // An injected resolver answering a name instead of an address: a failure.
  fake.Answer(Addresses({"not-an-ip"}));
  errors = s.errors();
  ASSERT_TRUE(Eventually([&] { return s.errors() > errors; }));
  EXPECT_EQ(r.last(), Set({"10.0.0.3:8001"}));
  s.Stop();
}

TEST(DnsHostSource, SystemResolverAnswersLiteralsAndLocalhost) {
  DnsAnswer a = SystemResolve("127.0.0.1");
  ASSERT_EQ(a.kind, DnsAnswer::Kind::kAddresses) << a.error;
  EXPECT_EQ(a.addresses, std::vector<std::string>{"127.0.0.1"});
  DnsAnswer none = SystemResolve("no-such-host.invalid");
  EXPECT_NE(none.kind, DnsAnswer::Kind::kAddresses);
}

TEST(HostUnion, MergesAndCallsBackOnlyOnChange) {
  std::vector<HostSet> seen;
  HostUnion u(3, [&](const HostSet& s) { seen.push_back(s); });
  u.Update(0, HostSet());
  ASSERT_EQ(seen.size(), 1u);  // the first report, even empty
  u.SlotCallback(1)(Set({"a:1", "b:2"}));
  u.Update(2, Set({"b:2"}));  // union unchanged
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], Set({"a:1", "b:2"}));
  u.Update(1, Set({"a:1"}));  // b:2 still from source 2
  EXPECT_EQ(seen.size(), 2u);
  u.Update(2, HostSet());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2], Set({"a:1"}));
  EXPECT_EQ(u.Current(), Set({"a:1"}));
  u.Update(7, Set({"z:1"}));  // no such slot: ignored
  EXPECT_EQ(seen.size(), 3u);
}

TEST(HostUnion, ConcurrentUpdatesEndInTheUnionOfTheLastSets) {
  int calls = 0;
  HostSet last;
  HostUnion u(4, [&](const HostSet& s) {  // serialized by the union
    ++calls;
    last = s;
  });
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&u, i] {
      for (uint16_t k = 1; k <= 200; ++k) {
        u.Update(i, HostSet{HostEndpoint{"h" + std::to_string(i), k}});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(last, Set({"h0:200", "h1:200", "h2:200", "h3:200"}));
  EXPECT_EQ(u.Current(), last);
  EXPECT_GT(calls, 0);
}

}  // namespace
}  // namespace inferd::discovery
