#include "trace/trace_config.h"

#include <gtest/gtest.h>

#include <map>

namespace inferd::trace {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars = {}) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TraceConfig Build(TraceFlags flags, std::map<std::string, std::string> env = {}) {
  auto cfg = BuildTraceConfig(flags, Env(std::move(env)));
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  return cfg.ok() ? *cfg : TraceConfig{};
}

std::string Error(TraceFlags flags, std::map<std::string, std::string> env = {}) {
  auto cfg = BuildTraceConfig(flags, Env(std::move(env)));
  EXPECT_FALSE(cfg.ok());
  return cfg.ok() ? std::string() : cfg.status().message();
}

TEST(TraceConfigTest, Defaults) {
  TraceConfig cfg = Build({});
  EXPECT_EQ(cfg.level, kTraceLevelOff);
  EXPECT_EQ(cfg.rate, 1000u);
  EXPECT_EQ(cfg.count, -1);
  EXPECT_EQ(cfg.mode, TraceMode::kTriton);
  EXPECT_EQ(cfg.file, "");
  EXPECT_EQ(cfg.log_frequency, 0u);
  EXPECT_EQ(cfg.url, "http://localhost:4318/v1/traces");
  ASSERT_EQ(cfg.resource.size(), 1u);
  EXPECT_EQ(cfg.resource[0], (std::pair<std::string, std::string>{"service.name", "inferd"}));
  EXPECT_EQ(cfg.bsp_max_queue_size, 2048u);
  EXPECT_EQ(cfg.bsp_schedule_delay_ms, 5000u);
  EXPECT_EQ(cfg.bsp_max_export_batch_size, 512u);
  EXPECT_TRUE(cfg.warnings.empty());
}

TEST(TraceConfigTest, SplitsAtTheFirstCommaAndTheFirstEqualsSign) {
  auto o = ParseTraceConfigOption("opentelemetry,resource=service.name=x");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->mode, "opentelemetry");
  EXPECT_EQ(o->setting, "resource");
  EXPECT_EQ(o->value, "service.name=x");
  o = ParseTraceConfigOption("rate=5");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->mode, "");
  EXPECT_EQ(o->setting, "rate");
  o = ParseTraceConfigOption("TRITON,file=/tmp/a,b");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->mode, "triton");
  EXPECT_EQ(o->value, "/tmp/a,b");
}

TEST(TraceConfigTest, FormatErrorsAreTritons) {
  auto err = [](const std::string& arg) {
    auto o = ParseTraceConfigOption(arg);
    EXPECT_FALSE(o.ok()) << arg;
    return o.ok() ? std::string() : o.status().message();
  };
  EXPECT_EQ(err("zipkin,rate=1"),
            "invalid value for trace mode option: zipkin. Available options are \"triton\" and "
            "\"opentelemetry\"");
  EXPECT_EQ(err("rate"),
            "--trace-config option format is '<trace mode>,<setting>=<value>'. Got rate");
  EXPECT_EQ(err("triton,file="),
            "--trace-config option format is '<trace mode>,<setting>=<value>'. Got triton,file=");
  EXPECT_EQ(err("=5"), "--trace-config option format is '<trace mode>,<setting>=<value>'. Got =5");
  EXPECT_EQ(
      err(",rate=1"),
      "No trace mode specified. --trace-config option format is <trace mode>,<setting>=<value> "
      "or <setting>=<value>. Got ,rate=1");
}

TEST(TraceConfigTest, GlobalAndModeSettings) {
  TraceConfig cfg = Build({.config = {"level=TIMESTAMPS", "level=tensors", "rate=1", "count=7",
                                      "triton,file=/tmp/t.json", "triton,log-frequency=3"}});
  EXPECT_EQ(cfg.level, kTraceLevelTimestamps | kTraceLevelTensors);
  EXPECT_EQ(cfg.rate, 1u);
  EXPECT_EQ(cfg.count, 7);
  EXPECT_EQ(cfg.file, "/tmp/t.json");
  EXPECT_EQ(cfg.log_frequency, 3u);

  cfg = Build(
      {.config = {"mode=opentelemetry", "opentelemetry,url=http://c:4318/v1/traces",
                  "opentelemetry,resource=service.name=svc",
                  "opentelemetry,resource=deployment.environment=dev",
                  "opentelemetry,bsp_max_queue_size=10", "opentelemetry,bsp_schedule_delay=20",
                  "opentelemetry,bsp_max_export_batch_size=5", "level=TIMESTAMPS"}});
  EXPECT_EQ(cfg.mode, TraceMode::kOpenTelemetry);
  EXPECT_EQ(cfg.url, "http://c:4318/v1/traces");
  ASSERT_EQ(cfg.resource.size(), 2u);
  EXPECT_EQ(cfg.resource[0].second, "svc");
  EXPECT_EQ(cfg.resource[1].first, "deployment.environment");
  EXPECT_EQ(cfg.bsp_max_queue_size, 10u);
  EXPECT_EQ(cfg.bsp_schedule_delay_ms, 20u);
  EXPECT_EQ(cfg.bsp_max_export_batch_size, 5u);
}

TEST(TraceConfigTest, LevelWords) {
  for (const char* on : {"timestamps", "TIMESTAMPS", "true", "on", "min", "max"}) {
    EXPECT_EQ(*ParseTraceLevelWord(on), uint32_t{kTraceLevelTimestamps}) << on;
  }
  EXPECT_EQ(*ParseTraceLevelWord("Tensors"), uint32_t{kTraceLevelTensors});
  EXPECT_EQ(*ParseTraceLevelWord("false"), uint32_t{kTraceLevelOff});
  EXPECT_EQ(ParseTraceLevelWord("loud").status().message(),
            "invalid value for trace level option: loud");
  EXPECT_EQ(TraceLevelNames(kTraceLevelOff), std::vector<std::string>{"OFF"});
  EXPECT_EQ(TraceLevelNames(kTraceLevelTimestamps | kTraceLevelTensors),
            (std::vector<std::string>{"TIMESTAMPS", "TENSORS"}));
}

TEST(TraceConfigTest, OffAnywhereTurnsTracingOff) {
  EXPECT_EQ(Build({.config = {"level=TIMESTAMPS", "level=OFF"}}).level, kTraceLevelOff);
  EXPECT_EQ(Build({.level = {"TIMESTAMPS", "OFF"}}).level, kTraceLevelOff);
  // --trace-config's level replaces the deprecated flag's, OFF included.
  EXPECT_EQ(Build({.config = {"level=TIMESTAMPS"}, .level = {"OFF"}}).level, kTraceLevelTimestamps);
}

TEST(TraceConfigTest, BadNumbersNameTheSetting) {
  EXPECT_EQ(Error({.config = {"rate=x"}}).rfind("Bad option: \"--trace-config rate\".\n", 0), 0u);
  EXPECT_EQ(Error({.config = {"count=-2"}}).rfind("Bad option: \"--trace-config count\".", 0), 0u);
  EXPECT_EQ(Error({.config = {"level=loud"}}),
            "Bad option: \"--trace-config level\".\ninvalid value for trace level option: loud");
  EXPECT_EQ(Error({.config = {"mode=zipkin"}}).rfind("Bad option: \"--trace-config mode\".", 0),
            0u);
  EXPECT_EQ(Error({.config = {"triton,log-frequency=-1"}})
                .rfind("Bad option: \"--trace-config triton,log-frequency\".", 0),
            0u);
  EXPECT_EQ(Error({.config = {"opentelemetry,bsp_max_queue_size=big"}})
                .rfind("Bad option: \"--trace-config opentelemetry,bsp_max_queue_size\".", 0),
            0u);
  EXPECT_EQ(Error({.rate = "fast"}).rfind("Bad option: \"--trace-rate\".", 0), 0u);
  EXPECT_EQ(Error({.count = "-5"}).rfind("Bad option: \"--trace-count\".", 0), 0u);
  EXPECT_EQ(Error({.config = {"rate=5x"}}).rfind("Bad option", 0), 0u);
}

TEST(TraceConfigTest, UnknownSettingsAreErrors) {
  EXPECT_NE(Error({.config = {"fle=/tmp/x"}}).find("'fle'"), std::string::npos);
  EXPECT_NE(Error({.config = {"triton,rate=5"}}).find("'triton,rate'"), std::string::npos);
  EXPECT_NE(Error({.config = {"opentelemetry,file=x"}}).find("'opentelemetry,file'"),
            std::string::npos);
  EXPECT_NE(Error({.config = {"opentelemetry,resource=novalue"}}).find("resource"),
            std::string::npos);
}

TEST(TraceConfigTest, DeprecatedFlagsAndTheirOverride) {
  TraceConfig cfg = Build({.level = {"TIMESTAMPS"},
                           .rate = "10",
                           .count = "3",
                           .file = "/tmp/f",
                           .log_frequency = "2"});
  EXPECT_EQ(cfg.level, kTraceLevelTimestamps);
  EXPECT_EQ(cfg.rate, 10u);
  EXPECT_EQ(cfg.count, 3);
  EXPECT_EQ(cfg.file, "/tmp/f");
  EXPECT_EQ(cfg.log_frequency, 2u);
  EXPECT_TRUE(cfg.warnings.empty());

  cfg = Build({.config = {"rate=20", "count=-1", "triton,file=/tmp/g", "triton,log-frequency=0",
                          "level=TENSORS"},
               .level = {"TIMESTAMPS"},
               .rate = "10",
               .count = "3",
               .file = "/tmp/f",
               .log_frequency = "2"});
  EXPECT_EQ(cfg.level, kTraceLevelTensors);
  EXPECT_EQ(cfg.rate, 20u);
  EXPECT_EQ(cfg.count, -1);
  EXPECT_EQ(cfg.file, "/tmp/g");
  EXPECT_EQ(cfg.log_frequency, 0u);
  EXPECT_EQ(cfg.warnings.size(), 5u);

  // In OpenTelemetry mode the file flags are ignored, with a warning each.
  cfg = Build({.config = {"mode=opentelemetry"}, .file = "/tmp/f", .log_frequency = "2"});
  EXPECT_EQ(cfg.warnings.size(), 2u);
}

TEST(TraceConfigTest, EnvironmentDefaults) {
  TraceConfig cfg = Build({}, {{"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
                               {"OTEL_BSP_SCHEDULE_DELAY", "250"},
                               {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "50"},
                               {"OTEL_RESOURCE_ATTRIBUTES", "a=1, b = two%20words ,bad,=x"}});
  EXPECT_EQ(cfg.bsp_max_queue_size, 100u);
  EXPECT_EQ(cfg.bsp_schedule_delay_ms, 250u);
  EXPECT_EQ(cfg.bsp_max_export_batch_size, 50u);
  ASSERT_EQ(cfg.resource.size(), 3u);
  EXPECT_EQ(cfg.resource[1], (std::pair<std::string, std::string>{"a", "1"}));
  EXPECT_EQ(cfg.resource[2], (std::pair<std::string, std::string>{"b", "two words"}));

  // Flags win over the environment; OTEL_SERVICE_NAME over the attribute.
  cfg = Build({.config = {"opentelemetry,bsp_max_queue_size=7",
                          "opentelemetry,bsp_max_export_batch_size=7"}},
              {{"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
               {"OTEL_RESOURCE_ATTRIBUTES", "service.name=a"},
               {"OTEL_SERVICE_NAME", "b"}});
  EXPECT_EQ(cfg.bsp_max_queue_size, 7u);
  EXPECT_EQ(cfg.resource[0].second, "b");

  EXPECT_EQ(Error({}, {{"OTEL_BSP_SCHEDULE_DELAY", "soon"}})
                .rfind("Bad option: \"OTEL_BSP_SCHEDULE_DELAY\".", 0),
            0u);
}

TEST(TraceConfigTest, ExportBatchNeverExceedsTheQueue) {
  TraceConfig cfg = Build({.config = {"opentelemetry,bsp_max_queue_size=10"}});
  EXPECT_EQ(cfg.bsp_max_export_batch_size, 10u);
  EXPECT_EQ(cfg.warnings.size(), 1u);
}

}  // namespace
}  // namespace inferd::trace
