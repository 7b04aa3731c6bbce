#include "core/log_control.h"

#include "core/sanitize.h"
#include "core/thread_annotations.h"

namespace inferd {
namespace {

// Serialises read-modify-write of the settings between concurrent changes.
Mutex g_change_mu;

std::string Quoted(std::string_view key) { return "log setting '" + Bounded(key) + "'"; }

}  // namespace

Status LogSettingsChange::Set(std::string_view key, const LogSettingValue& value) {
  if (std::holds_alternative<std::monostate>(value)) {
    // Null leaves a setting alone; an unknown key is still an error.
    for (std::string_view k : kLogSettingKeys) {
      if (k == key) return Status::Ok();
    }
  }
  auto wrong = [&](const char* kind, const char* grpc_case) {
    return InvalidArgument(Quoted(key) + " must be " + kind +
                           (grpc_ ? std::string(" (") + grpc_case + ")" : std::string()));
  };
  auto boolean = [&](std::optional<bool>& target) {
    if (const bool* b = std::get_if<bool>(&value)) {
      target = *b;
      return Status::Ok();
    }
    return wrong("a boolean", "bool_param");
  };
  if (key == "log_file") {
    file_ = true;  // whatever it holds: refused by Apply
    return Status::Ok();
  }
  if (key == "log_info") return boolean(info_);
  if (key == "log_warning") return boolean(warning_);
  if (key == "log_error") return boolean(error_);
  if (key == "log_verbose_level") {
    if (const uint64_t* n = std::get_if<uint64_t>(&value)) {
      verbose_ = *n;
      return Status::Ok();
    }
    return wrong("a non-negative integer", "uint32_param");
  }
  if (key == "log_format") {
    if (const std::string* s = std::get_if<std::string>(&value)) {
      format_ = *s;
      return Status::Ok();
    }
    return wrong("a string", "string_param");
  }
  std::string known;
  for (std::string_view k : kLogSettingKeys) known += (known.empty() ? "" : ", ") + std::string(k);
  return InvalidArgument("unknown " + Quoted(key) + " (known: " + known + ")");
}

Status LogSettingsChange::Apply() const {
  if (file_) {
    return Unimplemented(
        "log setting 'log_file' cannot be changed at run time (start inferd with --log-file)");
  }
  if (verbose_ && *verbose_ > static_cast<uint64_t>(kMaxLogVerbose)) {
    return InvalidArgument(Quoted("log_verbose_level") + " must be between 0 and " +
                           std::to_string(kMaxLogVerbose) + ", got " + std::to_string(*verbose_));
  }
  std::optional<LogFormat> format;
  if (format_) {
    format = ParseLogFormat(*format_);
    if (!format) {
      return InvalidArgument(Quoted("log_format") +
                             " must be \"default\", \"ISO8601\" or \"json\", got '" +
                             Bounded(*format_) + "'");
    }
  }
  MutexLock lock(g_change_mu);
  LogSettings s = GetLogSettings();
  if (info_) s.info = *info_;
  if (warning_) s.warning = *warning_;
  if (error_) s.error = *error_;
  if (verbose_) s.verbose = static_cast<int>(*verbose_);
  if (format) s.format = *format;
  SetLogSettings(s);
  return Status::Ok();
}

}  // namespace inferd
