#include "trace/trace_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace inferd::trace {
namespace {

constexpr const char* kFormatError =
    "--trace-config option format is '<trace mode>,<setting>=<value>'. Got ";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
StatusOr<T> ParseNumber(std::string_view v, T min, T max) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || out < min || out > max) {
    return InvalidArgument("expected an integer between " + std::to_string(min) + " and " +
                           std::to_string(max) + ", got '" + std::string(v) + "'");
  }
  return out;
}

StatusOr<uint32_t> ParseUint32(std::string_view v) {
  return ParseNumber<uint32_t>(v, 0, std::numeric_limits<uint32_t>::max());
}
StatusOr<int64_t> ParseCount(std::string_view v) {
  return ParseNumber<int64_t>(v, -1, std::numeric_limits<int32_t>::max());
}

StatusOr<TraceMode> ParseMode(std::string_view v) {
  std::string m = Lower(v);
  if (m == "triton") return TraceMode::kTriton;
  if (m == "opentelemetry") return TraceMode::kOpenTelemetry;
  return InvalidArgument("invalid value for trace mode option: " + std::string(v) +
                         ". Available options are \"triton\" and \"opentelemetry\"");
}

// `Bad option: "--trace-config <prefix><setting>".` + the reason, as Triton
// words a value that does not parse.
Status BadOption(const std::string& prefix, const std::string& setting, const Status& why) {
  return InvalidArgument("Bad option: \"--trace-config " + prefix + setting + "\".\n" +
                         why.message());
}

// Adds or replaces `key` in the ordered attribute list.
void SetResource(std::vector<std::pair<std::string, std::string>>& attrs, std::string key,
                 std::string value) {
  for (auto& [k, v] : attrs) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(std::move(key), std::move(value));
}

// `%XX` escapes of the W3C Baggage octet encoding OTEL_RESOURCE_ATTRIBUTES uses.
std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// OTEL_RESOURCE_ATTRIBUTES ("k1=v1,k2=v2"; malformed members are skipped,
// as the SDKs do) and OTEL_SERVICE_NAME (wins over service.name there).
void ResourceFromEnvironment(const EnvLookup& env, TraceConfig& cfg) {
  SetResource(cfg.resource, "service.name", "inferd");
  if (const char* attrs = env("OTEL_RESOURCE_ATTRIBUTES")) {
    std::string_view rest(attrs);
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view member = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      size_t eq = member.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = Trim(member.substr(0, eq));
      if (key.empty()) continue;
      SetResource(cfg.resource, PercentDecode(key), PercentDecode(Trim(member.substr(eq + 1))));
    }
  }
  if (const char* name = env("OTEL_SERVICE_NAME"); name && *name) {
    SetResource(cfg.resource, "service.name", name);
  }
}

// The OTEL_BSP_* defaults; a bad value is an error naming the variable.
Status BatchDefaultsFromEnvironment(const EnvLookup& env, TraceConfig& cfg) {
  struct Var {
    const char* name;
    uint32_t* target;
  };
  for (const Var& var : {Var{"OTEL_BSP_MAX_QUEUE_SIZE", &cfg.bsp_max_queue_size},
                         Var{"OTEL_BSP_SCHEDULE_DELAY", &cfg.bsp_schedule_delay_ms},
                         Var{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &cfg.bsp_max_export_batch_size}}) {
    const char* v = env(var.name);
    if (v == nullptr || *v == '\0') continue;
    auto n = ParseUint32(v);
    if (!n.ok()) {
      return InvalidArgument(std::string("Bad option: \"") + var.name + "\".\n" +
                             n.status().message());
    }
    *var.target = *n;
  }
  return Status::Ok();
}

// Global settings (no mode prefix). `level_set` tells the caller that a
// --trace-config level replaced the deprecated --trace-level.
Status ApplyGlobal(const TraceConfigOption& o, TraceConfig& cfg, bool& level_set, bool& level_off) {
  if (o.setting == "rate") {
    auto n = ParseUint32(o.value);
    if (!n.ok()) return BadOption("", o.setting, n.status());
    cfg.rate = *n;
  } else if (o.setting == "count") {
    auto n = ParseCount(o.value);
    if (!n.ok()) return BadOption("", o.setting, n.status());
    cfg.count = *n;
  } else if (o.setting == "level") {
    auto l = ParseTraceLevelWord(o.value);
    if (!l.ok()) return BadOption("", o.setting, l.status());
    if (!level_set) cfg.level = kTraceLevelOff;  // replaces --trace-level
    level_set = true;
    if (*l == kTraceLevelOff) level_off = true;
    cfg.level |= *l;
  } else if (o.setting == "mode") {
    auto m = ParseMode(o.value);
    if (!m.ok()) return BadOption("", o.setting, m.status());
    cfg.mode = *m;
  } else {
    return InvalidArgument("unknown --trace-config setting '" + o.setting +
                           "' (global settings: rate, level, count, mode)");
  }
  return Status::Ok();
}

Status ApplyTriton(const TraceConfigOption& o, TraceConfig& cfg) {
  if (o.setting == "file") {
    cfg.file = o.value;
  } else if (o.setting == "log-frequency") {
    auto n = ParseUint32(o.value);
    if (!n.ok()) return BadOption("triton,", o.setting, n.status());
    cfg.log_frequency = *n;
  } else {
    return InvalidArgument("unknown --trace-config setting 'triton," + o.setting +
                           "' (triton settings: file, log-frequency)");
  }
  return Status::Ok();
}

Status ApplyOpenTelemetry(const TraceConfigOption& o, TraceConfig& cfg) {
  uint32_t* bsp = nullptr;
  if (o.setting == "url") {
    cfg.url = o.value;
    return Status::Ok();
  }
  if (o.setting == "resource") {
    size_t eq = o.value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadOption("opentelemetry,", o.setting,
                       InvalidArgument("expected <key>=<value>, got '" + o.value + "'"));
    }
    SetResource(cfg.resource, o.value.substr(0, eq), o.value.substr(eq + 1));
    return Status::Ok();
  }
  if (o.setting == "bsp_max_queue_size") bsp = &cfg.bsp_max_queue_size;
  if (o.setting == "bsp_schedule_delay") bsp = &cfg.bsp_schedule_delay_ms;
  if (o.setting == "bsp_max_export_batch_size") bsp = &cfg.bsp_max_export_batch_size;
  if (bsp == nullptr) {
    return InvalidArgument("unknown --trace-config setting 'opentelemetry," + o.setting +
                           "' (opentelemetry settings: url, resource, bsp_max_queue_size, "
                           "bsp_schedule_delay, bsp_max_export_batch_size)");
  }
  auto n = ParseUint32(o.value);
  if (!n.ok()) return BadOption("opentelemetry,", o.setting, n.status());
  *bsp = *n;
  return Status::Ok();
}

// The deprecated flags, applied first so that --trace-config overrides them.
Status ApplyDeprecated(const TraceFlags& flags, TraceConfig& cfg, bool& level_off) {
  for (const std::string& word : flags.level) {
    auto l = ParseTraceLevelWord(word);
    if (!l.ok()) return InvalidArgument("Bad option: \"--trace-level\".\n" + l.status().message());
    if (*l == kTraceLevelOff) level_off = true;
    cfg.level |= *l;
  }
  if (flags.rate) {
    auto n = ParseUint32(*flags.rate);
    if (!n.ok()) return InvalidArgument("Bad option: \"--trace-rate\".\n" + n.status().message());
    cfg.rate = *n;
  }
  if (flags.count) {
    auto n = ParseCount(*flags.count);
    if (!n.ok()) return InvalidArgument("Bad option: \"--trace-count\".\n" + n.status().message());
    cfg.count = *n;
  }
  if (flags.file) cfg.file = *flags.file;
  if (flags.log_frequency) {
    auto n = ParseUint32(*flags.log_frequency);
    if (!n.ok()) {
      return InvalidArgument("Bad option: \"--trace-log-frequency\".\n" + n.status().message());
    }
    cfg.log_frequency = *n;
  }
  return Status::Ok();
}

void Warn(TraceConfig& cfg, bool deprecated_given, const char* flag, const char* what) {
  if (!deprecated_given) return;
  cfg.warnings.push_back(std::string("Overriding deprecated '") + flag + "' in favor of provided " +
                         what + " in --trace-config");
}

}  // namespace

StatusOr<TraceConfigOption> ParseTraceConfigOption(std::string_view arg) {
  TraceConfigOption out;
  size_t comma = arg.find(',');
  size_t setting_start = 0;
  if (comma == 0) {
    return InvalidArgument(
        "No trace mode specified. --trace-config option format is "
        "<trace mode>,<setting>=<value> or <setting>=<value>. Got " +
        std::string(arg));
  }
  if (comma != std::string_view::npos) {
    auto mode = ParseMode(arg.substr(0, comma));
    if (!mode.ok()) return mode.status();
    out.mode = TraceModeName(*mode);
    setting_start = comma + 1;
  }
  size_t eq = arg.find('=', setting_start);
  if (eq == std::string_view::npos) return InvalidArgument(kFormatError + std::string(arg));
  out.setting = std::string(arg.substr(setting_start, eq - setting_start));
  out.value = std::string(arg.substr(eq + 1));
  if (out.setting.empty() || out.value.empty()) {
    return InvalidArgument(kFormatError + std::string(arg));
  }
  return out;
}

StatusOr<uint32_t> ParseTraceLevelWord(std::string_view word) {
  std::string w = Lower(word);
  if (w == "off" || w == "false") return uint32_t{kTraceLevelOff};
  if (w == "timestamps" || w == "true" || w == "on" || w == "min" || w == "max") {
    return uint32_t{kTraceLevelTimestamps};
  }
  if (w == "tensors") return uint32_t{kTraceLevelTensors};
  return InvalidArgument("invalid value for trace level option: " + std::string(word));
}

std::vector<std::string> TraceLevelNames(uint32_t level) {
  std::vector<std::string> out;
  if (level & kTraceLevelTimestamps) out.emplace_back("TIMESTAMPS");
  if (level & kTraceLevelTensors) out.emplace_back("TENSORS");
  if (out.empty()) out.emplace_back("OFF");
  return out;
}

const char* TraceModeName(TraceMode mode) {
  return mode == TraceMode::kOpenTelemetry ? "opentelemetry" : "triton";
}

StatusOr<TraceConfig> BuildTraceConfig(const TraceFlags& flags, const EnvLookup& env) {
  TraceConfig cfg;
  ResourceFromEnvironment(env, cfg);
  INFERD_RETURN_IF_ERROR(BatchDefaultsFromEnvironment(env, cfg));
  bool level_off = false;
  INFERD_RETURN_IF_ERROR(ApplyDeprecated(flags, cfg, level_off));

  std::vector<TraceConfigOption> options;
  for (const std::string& arg : flags.config) {
    auto o = ParseTraceConfigOption(arg);
    if (!o.ok()) return o.status();
    options.push_back(std::move(*o));
  }
  // Global settings first: `mode` decides which mode's settings apply.
  bool level_set = false, rate_set = false, count_set = false;
  bool config_level_off = false;
  for (const auto& o : options) {
    if (!o.mode.empty()) continue;
    INFERD_RETURN_IF_ERROR(ApplyGlobal(o, cfg, level_set, config_level_off));
    rate_set |= o.setting == "rate";
    count_set |= o.setting == "count";
  }
  if (level_set) level_off = config_level_off;
  if (level_off) cfg.level = kTraceLevelOff;  // OFF anywhere turns tracing off
  Warn(cfg, level_set && !flags.level.empty(), "--trace-level", "level");
  Warn(cfg, rate_set && flags.rate.has_value(), "--trace-rate", "rate");
  Warn(cfg, count_set && flags.count.has_value(), "--trace-count", "count");

  bool file_set = false, frequency_set = false;
  for (const auto& o : options) {
    if (o.mode == "triton") {
      INFERD_RETURN_IF_ERROR(ApplyTriton(o, cfg));
      file_set |= o.setting == "file";
      frequency_set |= o.setting == "log-frequency";
    } else if (o.mode == "opentelemetry") {
      INFERD_RETURN_IF_ERROR(ApplyOpenTelemetry(o, cfg));
    }
  }
  if (cfg.mode == TraceMode::kTriton) {
    Warn(cfg, file_set && flags.file.has_value(), "--trace-file", "file");
    Warn(cfg, frequency_set && flags.log_frequency.has_value(), "--trace-log-frequency",
         "log-frequency");
  } else {
    if (flags.file) {
      cfg.warnings.emplace_back(
          "'--trace-file' is deprecated and will be ignored with opentelemetry tracing mode");
    }
    if (flags.log_frequency) {
      cfg.warnings.emplace_back(
          "'--trace-log-frequency' is deprecated and will be ignored with opentelemetry "
          "tracing mode");
    }
    if (cfg.level & kTraceLevelTensors) {
      cfg.warnings.emplace_back(
          "trace level TENSORS is not exported in opentelemetry mode (TIMESTAMPS only)");
    }
  }
  if (cfg.mode == TraceMode::kTriton && cfg.level != kTraceLevelOff && cfg.file.empty()) {
    cfg.warnings.emplace_back(
        "tracing is on but no trace file is given (--trace-config triton,file=<path>): nothing "
        "is traced");
  }
  if (cfg.bsp_max_export_batch_size > cfg.bsp_max_queue_size) {
    cfg.warnings.emplace_back(
        "bsp_max_export_batch_size is larger than bsp_max_queue_size; using "
        "the queue size");
    cfg.bsp_max_export_batch_size = cfg.bsp_max_queue_size;
  }
  return cfg;
}

}  // namespace inferd::trace
