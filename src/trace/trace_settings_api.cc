#include "trace/trace_settings_api.h"

#include <charconv>
#include <cstdint>
#include <limits>

namespace inferd::trace {
namespace {

// A single-valued key: exactly one value (gRPC may send several).
StatusOr<std::string> OneValue(const std::string& key, const std::vector<std::string>& values) {
  if (values.size() != 1) return InvalidArgument("expect only 1 value for '" + key + "'");
  return values[0];
}

template <typename T>
StatusOr<T> Number(const std::string& key, const std::string& text, int64_t min, int64_t max) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec == std::errc::invalid_argument || p != text.data() + text.size()) {
    return InvalidArgument("Unable to parse '" + key + "', got: " + text);
  }
  if (key == "trace_count" && ec == std::errc() && v < min) {
    return InvalidArgument("Unable to parse 'trace_count'. Expecting value >= -1, got: " + text);
  }
  if (ec != std::errc() || v < min || v > max) {
    return InvalidArgument("Unable to parse '" + key + "', value is out of range [ " +
                           std::to_string(min) + ", " + std::to_string(max) + " ], got: " + text);
  }
  return static_cast<T>(v);
}

Status Level(const std::vector<std::string>& values, TraceSettingChange<uint32_t>& out) {
  if (values.empty()) return Status::Ok();  // nothing asked (HTTP's [])
  uint32_t level = kTraceLevelOff;
  for (const auto& v : values) {
    if (v == "OFF") {
      if (values.size() != 1) {
        return InvalidArgument("Expect only one trace level 'OFF' is specified");
      }
    } else if (v == "TIMESTAMPS") {
      level |= kTraceLevelTimestamps;
    } else if (v == "TENSORS") {
      level |= kTraceLevelTensors;
    } else {
      return InvalidArgument("Unable to parse 'trace_level', got: " + v +
                             " (expected OFF, TIMESTAMPS or TENSORS)");
    }
  }
  out.value = level;
  return Status::Ok();
}

template <typename T>
Status Single(const std::string& key, const std::vector<std::string>& values, int64_t min,
              int64_t max, TraceSettingChange<T>& out) {
  auto text = OneValue(key, values);
  if (!text.ok()) return text.status();
  auto n = Number<T>(key, *text, min, max);
  if (!n.ok()) return n.status();
  out.value = *n;
  return Status::Ok();
}

}  // namespace

StatusOr<TraceSettingUpdate> ParseTraceSettingUpdate(const std::vector<TraceSettingInput>& input) {
  for (const auto& [key, values] : input) {
    if (key == "trace_file") {
      return Unimplemented("trace file location can not be updated through network protocol");
    }
  }
  constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  TraceSettingUpdate u;
  for (const auto& [key, values] : input) {
    if (key == "trace_level") {
      if (!values) {
        u.level.clear = true;
      } else {
        INFERD_RETURN_IF_ERROR(Level(*values, u.level));
      }
    } else if (key == "trace_rate") {
      if (!values) {
        u.rate.clear = true;
      } else {
        INFERD_RETURN_IF_ERROR(Single(key, *values, 0, kUint32Max, u.rate));
      }
    } else if (key == "trace_count") {
      if (!values) {
        u.count.clear = true;
      } else {
        INFERD_RETURN_IF_ERROR(Single(key, *values, -1, kInt32Max, u.count));
      }
    } else if (key == "log_frequency") {
      if (!values) {
        u.log_frequency.clear = true;
      } else {
        INFERD_RETURN_IF_ERROR(Single(key, *values, 0, kUint32Max, u.log_frequency));
      }
    }
  }
  return u;
}

std::vector<std::pair<std::string, std::vector<std::string>>> TraceSettingResponse(
    const TraceSettingValues& v, const TraceConfig& config) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  out.emplace_back("trace_level", TraceLevelNames(v.level));
  out.push_back({"trace_rate", {std::to_string(v.rate)}});
  out.push_back({"trace_count", {std::to_string(v.count)}});
  if (config.mode == TraceMode::kTriton) {
    out.push_back({"log_frequency", {std::to_string(v.log_frequency)}});
    out.push_back({"trace_file", {config.file}});
  }
  out.push_back({"trace_mode", {TraceModeName(config.mode)}});
  if (config.mode == TraceMode::kOpenTelemetry) {
    out.push_back({"url", {config.url}});
    std::vector<std::string> resource;
    for (const auto& [k, val] : config.resource) resource.push_back(k + "=" + val);
    out.emplace_back("resource", std::move(resource));
    out.push_back({"bsp_max_queue_size", {std::to_string(config.bsp_max_queue_size)}});
    out.push_back({"bsp_schedule_delay", {std::to_string(config.bsp_schedule_delay_ms)}});
    out.push_back(
        {"bsp_max_export_batch_size", {std::to_string(config.bsp_max_export_batch_size)}});
  }
  return out;
}

}  // namespace inferd::trace
