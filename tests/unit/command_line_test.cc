#include "server/command_line.h"

#include <gtest/gtest.h>

namespace inferd {
namespace {

TEST(CommandLineTest, ParsesBothFlagForms) {
  auto cl = ParseCommandLine({"--model-repository=/m", "--model-store", "/n", "--http-port", "0",
                              "--model-control-mode=EXPLICIT", "--load-model", "simple",
                              "--strict-readiness=off", "--http-max-input-size=1024"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.repositories, (std::vector<std::string>{"/m", "/n"}));
  EXPECT_EQ(cl->http.port, 0);
  EXPECT_EQ(cl->server.control_mode, ModelControlMode::kExplicit);
  EXPECT_FALSE(cl->server.strict_readiness);
  EXPECT_EQ(cl->http.max_body_bytes, 1024u);
}

TEST(CommandLineTest, ErrorsNameTheFlag) {
  auto bad = [](const std::vector<std::string>& a) {
    auto cl = ParseCommandLine(a);
    EXPECT_FALSE(cl.ok());
    return cl.ok() ? std::string() : cl.status().message();
  };
  EXPECT_NE(bad({"--model-repository=/m", "--http-port=99999"}).find("--http-port"),
            std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--bogus=1"}).find("--bogus"), std::string::npos);
  EXPECT_NE(bad({}).find("--model-repository"), std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--load-model=x"}).find("explicit"), std::string::npos);
  EXPECT_NE(bad({"--model-repository=/m", "--strict-readiness=maybe"}).find("boolean"),
            std::string::npos);
}

TEST(CommandLineTest, HardeningFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m",
                              "--http-max-header-size=4096",
                              "--http-max-chunks=9",
                              "--http-max-connections=7",
                              "--http-header-timeout-secs=3",
                              "--http-body-timeout-secs=4",
                              "--http-max-json-depth=12",
                              "--max-request-inputs=5",
                              "--max-request-outputs=6",
                              "--max-bytes-elements=100",
                              "--grpc-max-message-size=2048",
                              "--grpc-max-concurrent-streams=3",
                              "--grpc-idle-timeout-secs=8",
                              "--grpc-handshake-timeout-secs=9",
                              "--http-use-ssl-mutual=true",
                              "--http-root-cert=/ca",
                              "--grpc-use-ssl=true",
                              "--grpc-server-cert=/c",
                              "--grpc-server-key=/k",
                              "--http-restricted-api=statistics:k=v",
                              "--grpc-restricted-protocol=health:K=v"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->http.max_header_bytes, 4096u);
  EXPECT_EQ(cl->http.max_chunks, 9u);
  EXPECT_EQ(cl->http.max_connections, 7);
  EXPECT_EQ(cl->http.header_timeout_secs, 3);
  EXPECT_EQ(cl->http.body_timeout_secs, 4);
  EXPECT_EQ(cl->http_max_json_depth, 12u);
  EXPECT_EQ(cl->server.request_limits.max_inputs, 5u);
  EXPECT_EQ(cl->server.request_limits.max_outputs, 6u);
  EXPECT_EQ(cl->server.request_limits.max_bytes_elements, 100u);
  EXPECT_EQ(cl->grpc.max_message_bytes, 2048);
  EXPECT_EQ(cl->grpc.max_concurrent_streams, 3);
  EXPECT_EQ(cl->grpc.idle_timeout_secs, 8);
  EXPECT_EQ(cl->grpc.handshake_timeout_secs, 9);
  EXPECT_TRUE(cl->http.tls.enabled);  // mutual implies TLS
  EXPECT_TRUE(cl->http.tls.mutual);
  EXPECT_EQ(cl->http.tls.root_file, "/ca");
  EXPECT_TRUE(cl->grpc.tls.enabled);
  EXPECT_FALSE(cl->grpc.tls.mutual);
  EXPECT_EQ(cl->grpc.tls.key_file, "/k");
  ASSERT_NE(cl->http_restricted.Find(ApiGroup::kStatistics), nullptr);
  EXPECT_EQ(cl->grpc.restricted.Find(ApiGroup::kHealth)->key, "triton-grpc-protocol-k");
  auto bad = ParseCommandLine({"--model-repository=/m", "--http-max-connections=0"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--http-max-connections"), std::string::npos);
  // Past a day the millisecond channel argument would overflow an int.
  bad = ParseCommandLine({"--model-repository=/m", "--grpc-idle-timeout-secs=86401"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--grpc-idle-timeout-secs"), std::string::npos);
}

TEST(CommandLineTest, RepositoryLinksAndGrpcConnectionCap) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_FALSE(cl->server.follow_external_symlinks);
  EXPECT_EQ(cl->grpc.max_connections, 0) << "no cap by default";
  cl = ParseCommandLine({"--model-repository=/m", "--repository-follow-external-symlinks=true",
                         "--grpc-max-connections", "2"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->server.follow_external_symlinks);
  EXPECT_EQ(cl->grpc.max_connections, 2);
  for (const char* flag : {"--grpc-max-connections=-1", "--grpc-max-connections=1048577",
                           "--repository-follow-external-symlinks=sometimes"}) {
    SCOPED_TRACE(flag);
    auto bad = ParseCommandLine({"--model-repository=/m", flag});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find(std::string(flag).substr(0, std::string(flag).find('='))),
              std::string::npos)
        << bad.status().message();
  }
  EXPECT_NE(CommandLineUsage().find("--grpc-max-connections"), std::string::npos);
  EXPECT_NE(CommandLineUsage().find("--repository-follow-external-symlinks"), std::string::npos);
}

TEST(CommandLineTest, ModelUnloadDelay) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_unload_delay_secs, 0) << "at once by default";
  cl = ParseCommandLine({"--model-repository=/m", "--model-unload-delay-secs=20"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_unload_delay_secs, 20);
  auto bad = ParseCommandLine({"--model-repository=/m", "--model-unload-delay-secs=-1"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model-unload-delay-secs"), std::string::npos);
  EXPECT_NE(CommandLineUsage().find("--model-unload-delay-secs"), std::string::npos);
}

TEST(CommandLineTest, ModelResidencyFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_memory_budget, 0u) << "off by default";
  cl = ParseCommandLine({"--model-repository=/m", "--model-memory-budget=2G",
                         "--model-residency=lru", "--model-pin=a", "--model-pin=b",
                         "--model-residency-evict-explicit=true"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_memory_budget, uint64_t{2} << 30);
  EXPECT_EQ(cl->server.model_pins, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(cl->server.model_residency_evict_explicit);
  for (std::vector<std::string> bad : {std::vector<std::string>{"--model-memory-budget=0"},
                                       {"--model-memory-budget=lots"},
                                       {"--model-residency=lfu"},
                                       {"--model-pin=a"},
                                       {"--model-residency-evict-explicit=true"}}) {
    bad.insert(bad.begin(), "--model-repository=/m");
    auto r = ParseCommandLine(bad);
    EXPECT_FALSE(r.ok()) << bad.back();
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--model-"), std::string::npos) << r.status().message();
    }
  }
  EXPECT_NE(CommandLineUsage().find("--model-memory-budget"), std::string::npos);
}

TEST(CommandLineTest, RemoteRepositoryFlags) {
  auto cl = ParseCommandLine({"--model-repository=s3://bucket/models", "--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_cache_dir, "");
  EXPECT_FALSE(cl->server.s3_virtual_hosted);
  EXPECT_FALSE(cl->server.exit_on_error);
  // The default --exit-on-error=false does not let an unlistable repository start.
  EXPECT_FALSE(cl->server.retry_unlisted_repositories);

  cl = ParseCommandLine({"--model-repository=s3://b/m", "--model-cache-dir=/var/cache/inferd",
                         "--s3-addressing=virtual", "--exit-on-error=false"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.model_cache_dir, "/var/cache/inferd");
  EXPECT_TRUE(cl->server.s3_virtual_hosted);
  EXPECT_TRUE(cl->server.retry_unlisted_repositories);
  cl = ParseCommandLine({"--model-repository=s3://b/m", "--exit-on-error=true"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->server.retry_unlisted_repositories);

  auto bad = ParseCommandLine({"--model-repository=s3://b/m", "--s3-addressing=dns"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--s3-addressing"), std::string::npos);
}

TEST(CommandLineTest, LogFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->log.verbose, 0);
  EXPECT_TRUE(cl->log.info);
  EXPECT_TRUE(cl->log.warning);
  EXPECT_TRUE(cl->log.error);
  cl = ParseCommandLine({"--model-repository=/m", "--log-verbose=2", "--log-info=false",
                         "--log-warning", "off", "--log-error=0"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->log.verbose, 2);
  EXPECT_FALSE(cl->log.info);
  EXPECT_FALSE(cl->log.warning);
  EXPECT_FALSE(cl->log.error);
  EXPECT_EQ(cl->log.fd, 2);
  for (const char* bad : {"--log-verbose=-1", "--log-verbose=x", "--log-info=maybe"}) {
    auto r = ParseCommandLine({"--model-repository=/m", bad});
    ASSERT_FALSE(r.ok()) << bad;
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(r.status().message().find(name), std::string::npos) << r.status().message();
  }
  for (const char* flag : {"--log-verbose", "--log-info", "--log-warning", "--log-error",
                           "--log-format", "--log-file"}) {
    EXPECT_NE(CommandLineUsage().find(flag), std::string::npos) << flag;
  }
}

TEST(CommandLineTest, LogFormatAndFile) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->log.format, LogFormat::kDefault);
  EXPECT_EQ(cl->log.file, "");
  for (auto [value, format] :
       {std::pair{"default", LogFormat::kDefault}, std::pair{"ISO8601", LogFormat::kIso8601},
        std::pair{"json", LogFormat::kJson}}) {
    cl = ParseCommandLine({"--model-repository=/m", std::string("--log-format=") + value,
                           "--log-file", "/var/log/inferd.log"});
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    EXPECT_EQ(cl->log.format, format) << value;
    EXPECT_EQ(cl->log.file, "/var/log/inferd.log");
  }
  auto bad = ParseCommandLine({"--model-repository=/m", "--log-format=xml"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--log-format"), std::string::npos);
}

// The response cache (docs/response_cache.md): both of Triton's flags, and
// Triton's error when both are given.
TEST(CommandLineTest, ResponseCacheFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m", "--cache-config", "local,size=4096"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.response_cache_bytes, 4096u);
  cl = ParseCommandLine({"--model-repository=/m", "--response-cache-byte-size=8192"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->server.response_cache_bytes, 8192u);
  cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->server.response_cache_bytes, 0u);
  cl = ParseCommandLine(
      {"--model-repository=/m", "--cache-config=local,size=1", "--response-cache-byte-size=1"});
  ASSERT_FALSE(cl.ok());
  EXPECT_EQ(cl.status().message(),
            "Incompatible flags --response-cache-byte-size and --cache-config both provided. "
            "Please provide one or the other.");
  EXPECT_FALSE(ParseCommandLine({"--model-repository=/m", "--cache-config=redis,host=h"}).ok());
}

// Issue 24: --rate-limit and --rate-limit-resource (docs/rate_limiter.md).
TEST(CommandLineTest, RateLimitFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->server.rate_limit);  // off by default
  cl = ParseCommandLine({"--model-repository=/m", "--rate-limit=Execution_Count",
                         "--rate-limit-resource=R1:10", "--rate-limit-resource", "R2:5:1"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_TRUE(cl->server.rate_limit);
  ASSERT_EQ(cl->server.rate_limit_resources.size(), 2u);
  EXPECT_EQ(cl->server.rate_limit_resources[0].name, "R1");
  EXPECT_EQ(cl->server.rate_limit_resources[0].count, 10u);
  EXPECT_EQ(cl->server.rate_limit_resources[0].device, -1);
  EXPECT_EQ(cl->server.rate_limit_resources[1].device, 1);
  cl = ParseCommandLine({"--model-repository=/m", "--rate-limit=OFF"});
  ASSERT_TRUE(cl.ok());
  EXPECT_FALSE(cl->server.rate_limit);
  for (const char* bad : {"--rate-limit=on", "--rate-limit-resource=R1", "--rate-limit-resource=:1",
                          "--rate-limit-resource=R1:1:x"}) {
    auto b = ParseCommandLine({"--model-repository=/m", bad});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find(std::string(bad).substr(2, 10)), std::string::npos)
        << b.status().message();
  }
}

TEST(CommandLineTest, TraceFlags) {
  auto cl = ParseCommandLine({"--model-repository=/m", "--trace-config", "level=TIMESTAMPS",
                              "--trace-config=rate=1", "--trace-config=triton,file=/tmp/t.json",
                              "--trace-count=5", "--trace-log-frequency", "2"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->trace.level, trace::kTraceLevelTimestamps);
  EXPECT_EQ(cl->trace.rate, 1u);
  EXPECT_EQ(cl->trace.count, 5);
  EXPECT_EQ(cl->trace.file, "/tmp/t.json");
  EXPECT_EQ(cl->trace.log_frequency, 2u);
  auto bad = ParseCommandLine({"--model-repository=/m", "--trace-config=rate"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--trace-config option format"), std::string::npos);
}

}  // namespace
}  // namespace inferd
