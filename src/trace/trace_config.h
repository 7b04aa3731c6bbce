// TraceConfig: inferd's trace settings at start-up, from Triton's flags:
// `--trace-config [<mode>,]<setting>=<value>` (repeatable) and the
// deprecated `--trace-file`, `--trace-level`, `--trace-rate`,
// `--trace-count`, `--trace-log-frequency` (docs/tracing.md has the table).
//
// The grammar and the error texts are Triton's (PROTOCOL-NEXT §6.4): the
// first ',' splits the mode from the setting, the first '=' after it splits
// setting and value, so `opentelemetry,resource=service.name=x` is setting
// `resource` with value `service.name=x`. A `--trace-config` setting wins
// over its deprecated alias (with a warning). Unlike Triton, a setting that
// no mode knows (`rate` under `triton,`, `fle=...`) is an error rather than
// silently ignored: a misspelt trace flag would otherwise leave tracing off.
//
// Threading: pure functions of their arguments (the environment is read
// through the `env` callback only). Errors: InvalidArgument with the text
// an operator sees at start-up.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace inferd::trace {

// Trace levels are a bit set: TIMESTAMPS and TENSORS may both be on.
enum TraceLevelBits : uint32_t {
  kTraceLevelOff = 0,
  kTraceLevelTimestamps = 1,
  kTraceLevelTensors = 2,
};

enum class TraceMode { kTriton, kOpenTelemetry };

struct TraceConfig {
  uint32_t level = kTraceLevelOff;  // TraceLevelBits
  uint32_t rate = 1000;             // trace every rate-th request; 0: only propagated (OTel)
  int64_t count = -1;               // traces left to collect; -1: unlimited
  TraceMode mode = TraceMode::kTriton;
  // Triton mode.
  std::string file;            // "" : no file (traces are collected but not written)
  uint32_t log_frequency = 0;  // 0: one file at shutdown; N: file.<i> every N traces
  // OpenTelemetry mode.
  std::string url = "http://localhost:4318/v1/traces";
  // Resource attributes in order (service.name first); from
  // OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME, then the flags (a later
  // key replaces an earlier one).
  std::vector<std::pair<std::string, std::string>> resource;
  uint32_t bsp_max_queue_size = 2048;        // OTEL_BSP_MAX_QUEUE_SIZE
  uint32_t bsp_schedule_delay_ms = 5000;     // OTEL_BSP_SCHEDULE_DELAY
  uint32_t bsp_max_export_batch_size = 512;  // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  // What the operator should be told at start-up (deprecated flags
  // overridden or ignored); the caller logs them.
  std::vector<std::string> warnings;
};

// The trace flags as given on the command line, unparsed.
struct TraceFlags {
  std::vector<std::string> config = {};  // --trace-config (repeatable), in order
  std::vector<std::string> level = {};   // --trace-level (repeatable)
  std::optional<std::string> rate = {};  // --trace-rate
  std::optional<std::string> count = {};
  std::optional<std::string> file = {};
  std::optional<std::string> log_frequency = {};
  bool empty() const {
    return config.empty() && level.empty() && !rate && !count && !file && !log_frequency;
  }
};

// Environment lookup: nullptr when unset. Tests pass a map.
using EnvLookup = std::function<const char*(const char* name)>;

// The settings `flags` give, with defaults from the environment where a
// flag does not set them: OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_SCHEDULE_DELAY,
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME. Errors carry
// Triton's texts, e.g. `Bad option: "--trace-config rate".` followed by the reason.
StatusOr<TraceConfig> BuildTraceConfig(const TraceFlags& flags, const EnvLookup& env);

// One `--trace-config` argument split into (mode, setting, value); mode is
// "" for a global setting. Errors: the three format errors of §6.4.
struct TraceConfigOption {
  std::string mode;  // "", "triton" or "opentelemetry" (lower-cased)
  std::string setting;
  std::string value;
};
StatusOr<TraceConfigOption> ParseTraceConfigOption(std::string_view arg);

// A command-line level word (case-insensitive): off/false → off;
// timestamps/true/on/min/max → TIMESTAMPS; tensors → TENSORS.
StatusOr<uint32_t> ParseTraceLevelWord(std::string_view word);

// "TIMESTAMPS", "TENSORS" or "OFF" for each bit, as the trace API lists them.
std::vector<std::string> TraceLevelNames(uint32_t level);

const char* TraceModeName(TraceMode mode);  // "triton" | "opentelemetry"

}  // namespace inferd::trace
