// KubernetesHostSource against fake_kube_api.py: a real HTTPS server (a
// throwaway self-signed certificate as the CA file) speaking the list and
// watch protocol of EndpointSlices. Waits are conditions with deadlines.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "discovery/kubernetes_host_source.h"
#include "fake_kube_api.h"
#include "source_test_util.h"

namespace inferd::discovery {
namespace {

namespace fs = std::filesystem;
using testing::Eventually;
using testing::FakeKubeApi;
using testing::Set;
using testing::SetRecorder;
using testing::Str;

// A slice on port "grpc" 8001: `ready` addresses, plus one not ready and
// one terminating (both never reported).
std::string SliceCommand(const std::string& name, const std::vector<std::string>& ready,
                         bool silent = false) {
  std::string endpoints;
  for (const std::string& a : ready) {
    endpoints += R"({"addresses":[")" + a + R"("],"conditions":{"ready":true}},)";
  }
  endpoints += R"({"addresses":["10.9.9.1"],"conditions":{"ready":false}},)";
  endpoints += R"({"addresses":["10.9.9.2"],"conditions":{"ready":true,"terminating":true}})";
  return R"({"op":"set_slice","name":")" + name + R"(","silent":)" + (silent ? "true" : "false") +
         R"(,"slice":{"addressType":"IPv4","ports":[{"name":"http","port":8000},)" +
         R"({"name":"grpc","port":8001}],"endpoints":[)" + endpoints + "]}}";
}

struct Request {
  bool watch = false;
  std::string rv;
  int status = 0;
};

class KubernetesSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "kube_source_test.XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    WriteToken("good-token");
    fake_ = std::make_unique<FakeKubeApi>(dir_, "good-token");
    ASSERT_TRUE(fake_->ok()) << fake_->error();
  }
  void TearDown() override {
    if (source_) source_->Stop();
    fake_.reset();
    fs::remove_all(dir_);
  }

  void WriteToken(const std::string& token) {
    std::ofstream(dir_ + "/token.tmp") << token << "\n";
    fs::rename(dir_ + "/token.tmp", dir_ + "/token");
  }

  KubernetesSourceOptions Options() {
    KubernetesSourceOptions o;
    o.namespace_name = "prod";
    o.service = "svc";
    o.port.name = "grpc";
    o.api_url = fake_->url();
    o.token_file = dir_ + "/token";
    o.ca_file = fake_->ca_file();
    o.initial_backoff = std::chrono::milliseconds(20);
    o.max_backoff = std::chrono::milliseconds(200);
    return o;
  }

  void StartSource(KubernetesSourceOptions o) {
    source_ = std::make_unique<KubernetesHostSource>(std::move(o));
    source_->Start(recorder_.Callback());
  }

  std::string Command(const std::string& json) {
    std::string answer = fake_->Command(json);
    EXPECT_FALSE(answer.empty()) << json;
    return answer;
  }
  // The resourceVersion a command's answer names.
  std::string Rv(const std::string& json) {
    rapidjson::Document d;
    d.Parse(Command(json).c_str());
    return d.IsObject() && d.HasMember("rv") ? d["rv"].GetString() : "";
  }
  int Watchers() { return State().second; }
  std::vector<Request> Requests() { return State().first; }
  std::pair<std::vector<Request>, int> State() {
    rapidjson::Document d;
    d.Parse(Command(R"({"op":"state"})").c_str());
    std::pair<std::vector<Request>, int> out;
    if (!d.IsObject()) return out;
    for (const auto& r : d["requests"].GetArray()) {
      Request q;
      q.watch = r["watch"].GetBool();
      q.rv = r["rv"].GetString();
      q.status = r.HasMember("status") ? r["status"].GetInt() : 0;
      out.first.push_back(q);
    }
    out.second = d["watchers"].GetInt();
    return out;
  }
  size_t Lists() {
    size_t n = 0;
    for (const Request& r : Requests()) n += r.watch ? 0 : 1;
    return n;
  }
  bool WaitWatching() {
    return Eventually([&] { return Watchers() == 1; });
  }

  std::string dir_;
  std::unique_ptr<FakeKubeApi> fake_;
  SetRecorder recorder_;
  std::unique_ptr<KubernetesHostSource> source_;
};

TEST_F(KubernetesSourceTest, ListThenWatchAddedModifiedDeletedOverTls) {
  Command(SliceCommand("svc-a", {"10.0.0.1", "10.0.0.2"}));
  StartSource(Options());
  EXPECT_EQ(source_->name(), "kubernetes:prod/svc:grpc");
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.0.2:8001"}))) << Str(recorder_.last());
  ASSERT_TRUE(WaitWatching());

  Command(SliceCommand("svc-b", {"10.0.1.1"}));
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.0.2:8001", "10.0.1.1:8001"})))
      << Str(recorder_.last());
  Command(SliceCommand("svc-a", {"10.0.0.2"}));
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.2:8001", "10.0.1.1:8001"}))) << Str(recorder_.last());
  Command(R"({"op":"delete_slice","name":"svc-b"})");
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.2:8001"}))) << Str(recorder_.last());
  EXPECT_EQ(source_->errors(), 0u);

  std::vector<Request> requests = Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_FALSE(requests[0].watch);
  EXPECT_TRUE(requests[1].watch);
  EXPECT_EQ(requests[1].rv, "2");  // the list's resourceVersion
}

TEST_F(KubernetesSourceTest, NumericPortFromTheCommandLine) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  KubernetesSourceOptions o = Options();
  o.port = KubePort{9000, ""};
  StartSource(o);
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:9000"}))) << Str(recorder_.last());
}

TEST_F(KubernetesSourceTest, BrokenStreamResumesFromTheLastResourceVersion) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  StartSource(Options());
  ASSERT_TRUE(WaitWatching());
  Command(SliceCommand("svc-b", {"10.0.1.1"}));
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.1.1:8001"})));
  std::string bookmark = Rv(R"({"op":"bookmark"})");  // moves resourceVersion on
  Command(R"({"op":"drop"})");
  // While the watch is down: an event the resumed watch must replay.
  Command(SliceCommand("svc-c", {"10.0.2.1"}));
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.1.1:8001", "10.0.2.1:8001"})))
      << Str(recorder_.last());

  std::vector<Request> requests = Requests();
  ASSERT_GE(requests.size(), 3u);
  EXPECT_TRUE(requests[2].watch);
  EXPECT_EQ(requests[2].rv, bookmark);
  EXPECT_EQ(Lists(), 1u);            // resumed, not listed again
  EXPECT_GE(source_->errors(), 1u);  // the cut connection
}

TEST_F(KubernetesSourceTest, ExpiredResourceVersionErrorEventRelists) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  StartSource(Options());
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001"})));
  ASSERT_TRUE(WaitWatching());
  // A change whose event is lost to compaction: only a new list shows it.
  Command(SliceCommand("svc-a", {"10.0.0.5"}, /*silent=*/true));
  Command(R"({"op":"expire"})");  // the open watch gets ERROR 410
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.5:8001"}))) << Str(recorder_.last());
  EXPECT_EQ(Lists(), 2u);
  EXPECT_EQ(source_->errors(), 0u);  // a relist is routine
}

TEST_F(KubernetesSourceTest, Http410OnWatchRelists) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  StartSource(Options());
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001"})));
  ASSERT_TRUE(WaitWatching());
  Command(SliceCommand("svc-b", {"10.0.1.1"}, /*silent=*/true));
  Command(R"({"op":"gone_http"})");
  Command(R"({"op":"drop"})");
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.1.1:8001"}))) << Str(recorder_.last());
  EXPECT_EQ(Lists(), 2u);
  bool saw_410 = false;
  for (const Request& r : Requests()) saw_410 = saw_410 || (r.watch && r.status == 410);
  EXPECT_TRUE(saw_410);
}

TEST_F(KubernetesSourceTest, WrongTokenCountsErrorsKeepsTheSetAndRereadsTheToken) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  StartSource(Options());
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001"})));
  ASSERT_TRUE(WaitWatching());
  int calls = recorder_.calls();

  Command(R"({"op":"token","token":"rotated-token"})");
  Command(R"({"op":"drop"})");
  ASSERT_TRUE(Eventually([&] {
    size_t refused = 0;
    for (const Request& r : Requests()) refused += r.status == 401 ? 1 : 0;
    return refused >= 2;
  }));
  EXPECT_GE(source_->errors(), 2u);
  EXPECT_EQ(recorder_.last(), Set({"10.0.0.1:8001"}));
  EXPECT_EQ(recorder_.calls(), calls);

  WriteToken("rotated-token");  // the kubelet rotates the projected token
  ASSERT_TRUE(WaitWatching());
  Command(SliceCommand("svc-b", {"10.0.1.1"}));
  ASSERT_TRUE(recorder_.WaitFor(Set({"10.0.0.1:8001", "10.0.1.1:8001"}))) << Str(recorder_.last());
}

TEST_F(KubernetesSourceTest, UntrustedCertificateIsAnError) {
  Command(SliceCommand("svc-a", {"10.0.0.1"}));
  // A CA of its own, which did not sign the server's certificate.
  std::string other = dir_ + "/other";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other "
                         "-keyout " +
                         other + ".key -out " + other + ".pem 2>/dev/null")
                            .c_str()),
            0);
  KubernetesSourceOptions o = Options();
  o.ca_file = other + ".pem";
  StartSource(o);
  ASSERT_TRUE(Eventually([&] { return source_->errors() >= 2; }));
  EXPECT_EQ(recorder_.calls(), 0);
  EXPECT_TRUE(Requests().empty());  // never got past TLS
}

TEST_F(KubernetesSourceTest, StopInterruptsAWatchAtOnce) {
  StartSource(Options());
  ASSERT_TRUE(recorder_.WaitFor(HostSet()));  // an empty Service is a complete answer
  ASSERT_TRUE(WaitWatching());
  auto start = std::chrono::steady_clock::now();
  source_->Stop();
  // Not a timing assertion on the code under test's speed: only that Stop
  // does not wait for the watch's 300 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  ASSERT_TRUE(Eventually([&] { return Watchers() == 0; }));
}

}  // namespace
}  // namespace inferd::discovery
