// The logging extension's settings, protocol-neutral (docs/logging.md):
// what HTTP /v2/logging and gRPC LogSettings read and change. Each front end
// turns its message's members into LogSettingValues and Sets them on a
// LogSettingsChange (errors name the key), applies the change, and answers
// with every key's current value (kLogSettingKeys, GetLogSettings).
//
// Threading: Apply may run on any thread; concurrent changes are applied
// one after another (each sees the other's keys). The log itself reads the
// settings without locks (core/log.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/log.h"
#include "core/status.h"

namespace inferd {

// The keys, in the order answers list them (Triton's names).
inline constexpr std::array<std::string_view, 6> kLogSettingKeys = {
    "log_file", "log_info", "log_warning", "log_error", "log_verbose_level", "log_format"};

// The highest verbose level (as --log-verbose).
inline constexpr int kMaxLogVerbose = 100;

// A value of another kind than the four below (a negative or fractional
// number, an array, an object; a gRPC value of the wrong oneof case).
struct LogSettingWrongKind {};

// One member's value; std::monostate is null (a gRPC value with no case
// set), which leaves the setting as it is.
using LogSettingValue =
    std::variant<std::monostate, bool, uint64_t, std::string, LogSettingWrongKind>;

class LogSettingsChange {
 public:
  // `grpc`: type errors name the gRPC oneof case (bool_param...).
  explicit LogSettingsChange(bool grpc = false) : grpc_(grpc) {}

  // Records `value` for `key`. INVALID_ARGUMENT for an unknown key or a
  // value of the wrong kind, naming the key.
  Status Set(std::string_view key, const LogSettingValue& value);

  // Checks what Set could not (a log_file: UNIMPLEMENTED; the verbose level's
  // range, the format's name: INVALID_ARGUMENT naming the key), then applies
  // every recorded value, or none when one is refused.
  Status Apply() const;

 private:
  bool grpc_;
  bool file_ = false;  // log_file given (not null)
  std::optional<bool> info_, warning_, error_;
  std::optional<uint64_t> verbose_;
  std::optional<std::string> format_;
};

}  // namespace inferd
