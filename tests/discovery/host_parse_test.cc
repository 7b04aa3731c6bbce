// The pure parts of the host sources: endpoint, list and hosts-file
// parsing, the command-line flags, EndpointSlice JSON and the line splitter.
#include <gtest/gtest.h>

#include <cstdlib>

#include "discovery/host_list.h"
#include "discovery/host_sources.h"
#include "discovery/kube_endpoint_slices.h"
#include "discovery/line_splitter.h"
#include "source_test_util.h"

namespace inferd::discovery {
namespace {

using testing::Set;

TEST(ParseHostEndpoint, GoodForms) {
  auto e = ParseHostEndpoint("inferd-0.inferd:8001");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "inferd-0.inferd");
  EXPECT_EQ(e->port, 8001);
  EXPECT_EQ(e->id(), "inferd-0.inferd:8001");
  auto v4 = ParseHostEndpoint(" 10.0.0.1:65535 ");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->id(), "10.0.0.1:65535");
  auto v6 = ParseHostEndpoint("[fd00::1]:1");
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->host, "fd00::1");
  EXPECT_EQ(v6->id(), "[fd00::1]:1");
  EXPECT_TRUE(ParseHostEndpoint("[fe80::1%eth0]:80").ok());
}

TEST(ParseHostEndpoint, BadFormsNameTheTextAndTheProblem) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"", "empty"}, Case{"host", "no port"}, Case{"host:", "no port"},
                        Case{":80", "empty host"}, Case{"h:0", "1 to 65535"},
                        Case{"h:65536", "1 to 65535"}, Case{"h:-1", "1 to 65535"},
                        Case{"h:80x", "1 to 65535"}, Case{"fd00::1:80", "needs brackets"},
                        Case{"[fd00::1:80", "no ']'"}, Case{"[fd00::1]80", "no port"},
                        Case{"[]:80", "empty host"}, Case{"[10.0.0.1]:80", "not an IPv6"},
                        Case{"a b:80", "characters"}, Case{"a/b:80", "characters"}}) {
    auto e = ParseHostEndpoint(c.text);
    ASSERT_FALSE(e.ok()) << c.text;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(std::string("'") + c.text + "'"), std::string::npos)
        << e.status().message();
    EXPECT_NE(e.status().message().find(c.why), std::string::npos) << e.status().message();
  }
}

TEST(HostEndpoint, OrdersAndComparesByHostThenPort) {
  HostSet s = Set({"b:1", "a:2", "a:1", "a:1"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.begin()->id(), "a:1");
}

TEST(ParseHostList, CommaSeparated) {
  auto s = ParseHostList("a:1, b:2 ,[::1]:3");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, Set({"a:1", "b:2", "[::1]:3"}));
  EXPECT_FALSE(ParseHostList("").ok());
  EXPECT_FALSE(ParseHostList("a:1,,b:2").ok());
  EXPECT_FALSE(ParseHostList("a:1,").ok());
  auto bad = ParseHostList("a:1,b");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'b'"), std::string::npos);
}

TEST(ParseHostsFileContent, CommentsBlankLinesAndLineNumbers) {
  auto s = ParseHostsFileContent("# inferd hosts\n\n10.0.0.1:8001  # first\r\n  h2:8001\n#x:1\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(*s, Set({"10.0.0.1:8001", "h2:8001"}));
  auto empty = ParseHostsFileContent("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto bad = ParseHostsFileContent("a:1\n\nnot-an-endpoint\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("'not-an-endpoint'"), std::string::npos);
}

TEST(HostSourceFlags, ParseAndBuild) {
  HostSourceOptions o;
  for (const char* arg : {"--hosts=a:1,b:2", "--hosts=c:3", "--hosts-file=/tmp/h",
                          "--dns=inferd.ns.svc:8001", "--source-interval-ms=250",
                          "--kubernetes-service=ns/inferd:grpc", "--kubernetes-api=https://k:443",
                          "--kubernetes-token-file=/t", "--kubernetes-ca-file=/c"}) {
    auto r = ParseHostSourceFlag(arg, o);
    ASSERT_TRUE(r.ok()) << arg << ": " << r.status().message();
    EXPECT_TRUE(*r) << arg;
  }
  auto other = ParseHostSourceFlag("--grpc-port=8001", o);
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(*other);
  EXPECT_FALSE(ParseHostSourceFlag("--source-interval-ms=0", o).ok());
  EXPECT_FALSE(ParseHostSourceFlag("--hosts=", o).ok());
  EXPECT_EQ(o.interval, std::chrono::milliseconds(250));

  auto sources = MakeHostSources(o);
  ASSERT_TRUE(sources.ok()) << sources.status().message();
  ASSERT_EQ(sources->size(), 4u);
  EXPECT_EQ((*sources)[0]->name(), "static:a:1,b:2,c:3");
  EXPECT_EQ((*sources)[1]->name(), "file:/tmp/h");
  EXPECT_EQ((*sources)[2]->name(), "dns:inferd.ns.svc:8001");
  EXPECT_EQ((*sources)[3]->name(), "kubernetes:ns/inferd:grpc");
}

TEST(HostSourceFlags, BuildErrors) {
  EXPECT_EQ(MakeHostSources({}).status().code(), StatusCode::kInvalidArgument);
  HostSourceOptions bad_hosts;
  bad_hosts.hosts = {"a:1,b"};
  EXPECT_EQ(MakeHostSources(bad_hosts).status().code(), StatusCode::kInvalidArgument);
  HostSourceOptions bad_dns;
  bad_dns.dns = {"name-without-port"};
  EXPECT_EQ(MakeHostSources(bad_dns).status().code(), StatusCode::kInvalidArgument);
  // Outside a pod, --kubernetes-service needs --kubernetes-api.
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  HostSourceOptions k8s;
  k8s.kubernetes_services = {"ns/svc:8001"};
  EXPECT_EQ(MakeHostSources(k8s).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ParseKubernetesService, NumberOrName) {
  auto n = ParseKubernetesService("prod/inferd:8001");
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->namespace_name, "prod");
  EXPECT_EQ(n->service, "inferd");
  EXPECT_EQ(n->port.number, 8001);
  auto named = ParseKubernetesService("prod/inferd:grpc");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->port.number, 0);
  EXPECT_EQ(named->port.name, "grpc");
  for (const char* bad :
       {"inferd:8001", "prod/inferd", "prod/inferd:", "/inferd:1", "prod/:1", "Prod/inferd:1",
        "prod/in&ferd:1", "prod/inferd:70000", "prod/inferd:Grpc"}) {
    auto r = ParseKubernetesService(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--kubernetes-service"), std::string::npos);
  }
}

constexpr const char* kSlice = R"({
  "metadata": {"name": "inferd-abc", "resourceVersion": "17"},
  "addressType": "IPv4",
  "ports": [{"name": "http", "port": 8000}, {"name": "grpc", "port": 8001}],
  "endpoints": [
    {"addresses": ["10.0.0.1"], "conditions": {"ready": true}},
    {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
    {"addresses": ["10.0.0.3"]},
    {"addresses": ["10.0.0.4"], "conditions": {"ready": true, "terminating": true}},
    {"addresses": ["10.0.0.5"], "conditions": {"ready": null, "serving": true}},
    {"addresses": ["not an ip"]}
  ]})";

TEST(EndpointSlices, ReadyAddressesOnTheNamedPort) {
  auto e = ParseWatchEvent(std::string(R"({"type":"ADDED","object":)") + kSlice + "}",
                           KubePort{0, "grpc"});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->type, WatchEvent::Type::kAdded);
  EXPECT_EQ(e->slice_name, "inferd-abc");
  EXPECT_EQ(e->resource_version, "17");
  EXPECT_EQ(e->endpoints, Set({"10.0.0.1:8001", "10.0.0.3:8001", "10.0.0.5:8001"}));

  auto numeric = ParseWatchEvent(std::string(R"({"type":"MODIFIED","object":)") + kSlice + "}",
                                 KubePort{9000, ""});
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(numeric->endpoints, Set({"10.0.0.1:9000", "10.0.0.3:9000", "10.0.0.5:9000"}));

  auto no_such_port = ParseWatchEvent(std::string(R"({"type":"ADDED","object":)") + kSlice + "}",
                                      KubePort{0, "metrics"});
  ASSERT_TRUE(no_such_port.ok());
  EXPECT_TRUE(no_such_port->endpoints.empty());
}

// Found by fuzz/kube_watch_fuzz.cc: an IPv4/IPv6 slice's addresses were
// checked as HOST:PORT, which takes host names ("09.1.0.5", "a.example")
// that the prober would then resolve. Only IP literals of the slice's family.
TEST(EndpointSlices, OnlyIpLiteralsOfTheSlicesFamily) {
  auto e = ParseWatchEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"s"},"addressType":"IPv4",
          "ports":[{"name":"grpc","port":1}],"endpoints":[{"addresses":[
          "10.0.0.1","09.1.0.5","a.example","10.0.0.2 ","fd00::1","10.0.0.3\u0000x",""]}]}})",
      KubePort{0, "grpc"});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->endpoints, Set({"10.0.0.1:1"}));
  auto v6 = ParseWatchEvent(
      R"({"type":"ADDED","object":{"metadata":{"name":"s"},"addressType":"IPv6",
          "ports":[{"name":"grpc","port":1}],"endpoints":[{"addresses":[
          "fd00::1","fe80::1%eth0","10.0.0.1","[fd00::2]"]}]}})",
      KubePort{0, "grpc"});
  ASSERT_TRUE(v6.ok()) << v6.status().message();
  EXPECT_EQ(v6->endpoints, Set({"[fd00::1]:1"}));
}

TEST(EndpointSlices, ListAndOtherEvents) {
  auto list = ParseEndpointSliceList(
      std::string(R"({"metadata":{"resourceVersion":"42"},"items":[)") + kSlice +
          R"(,{"metadata":{"name":"v6"},"addressType":"IPv6","ports":[{"name":"grpc","port":1}],
               "endpoints":[{"addresses":["fd00::1"]}]},
             {"metadata":{"name":"fqdn"},"addressType":"FQDN","ports":[{"name":"grpc","port":1}],
               "endpoints":[{"addresses":["a.example"]}]}]})",
      KubePort{0, "grpc"});
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->resource_version, "42");
  ASSERT_EQ(list->slices.size(), 3u);
  EXPECT_EQ(list->slices["v6"], Set({"[fd00::1]:1"}));
  EXPECT_TRUE(list->slices["fqdn"].empty());
  EXPECT_EQ(UnionOfSlices(list->slices).size(), 4u);

  auto gone = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version"}})",
      KubePort{1, ""});
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->type, WatchEvent::Type::kError);
  EXPECT_EQ(gone->error_code, 410);
  auto bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"EndpointSlice","metadata":{"resourceVersion":"99"}}})",
      KubePort{1, ""});
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->type, WatchEvent::Type::kBookmark);
  EXPECT_EQ(bookmark->resource_version, "99");
  auto deleted = ParseWatchEvent(
      R"({"type":"DELETED","object":{"metadata":{"name":"s","resourceVersion":"5"}}})",
      KubePort{1, ""});
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->slice_name, "s");

  for (const char* bad :
       {"", "not json", "[]", R"({"type":"ADDED"})", R"({"type":"WHAT","object":{}})",
        R"({"type":"ADDED","object":{"addressType":"IPv4","endpoints":{}}})"}) {
    EXPECT_FALSE(ParseWatchEvent(bad, KubePort{1, ""}).ok()) << bad;
  }
  EXPECT_FALSE(ParseEndpointSliceList(R"({"items":[]})", KubePort{1, ""}).ok());
}

TEST(LineSplitter, SplitsAcrossChunksAndBoundsLines) {
  std::vector<std::string> lines;
  LineSplitter s(8, [&](std::string_view l) {
    lines.emplace_back(l);
    return Status();
  });
  EXPECT_TRUE(s.Feed("ab").ok());
  EXPECT_TRUE(s.Feed("c\r\n\nde").ok());
  EXPECT_TRUE(s.Feed("f\n12345678\n").ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"abc", "def", "12345678"}));
  EXPECT_EQ(s.pending(), 0u);
  Status too_long = s.Feed("123456789");
  EXPECT_EQ(too_long.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(s.Feed("\n").ok());  // no more input after a failure

  LineSplitter failing(100, [](std::string_view) { return InvalidArgument("no"); });
  EXPECT_EQ(failing.Feed("x\n").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferd::discovery
