// The log's line formats (core/log.h): pure functions, thread-safe.
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "core/log.h"

namespace inferd {
namespace {

std::string_view TextPrefix(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "inferd: error: ";
    case LogLevel::kWarning:
      return "inferd: warning: ";
    case LogLevel::kVerbose:
      return "inferd: verbose: ";
    case LogLevel::kInfo:
      break;
  }
  return "inferd: ";
}

std::string_view JsonLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kVerbose:
      return "verbose";
    case LogLevel::kInfo:
      break;
  }
  return "info";
}

// The default line: prefix, message kept on its line, newline.
void AppendTextLine(std::string& line, LogLevel level, std::string_view message) {
  line += TextPrefix(level);
  for (char c : message) {
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else {
      line += c;
    }
  }
  line += '\n';
}

// The length of the well-formed UTF-8 sequence starting at s[i] (2 to 4
// bytes; s[i] >= 0x80), or 0 when there is none (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = at(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  }
  return n;
}

void AppendJsonField(std::string& line, std::string_view key, std::string_view value) {
  line += ",\"";
  line += key;
  line += "\":\"";
  line += JsonEscapeLog(value);
  line += '"';
}

}  // namespace

std::string_view LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kIso8601:
      return "ISO8601";
    case LogFormat::kJson:
      return "json";
    case LogFormat::kDefault:
      break;
  }
  return "default";
}

std::optional<LogFormat> ParseLogFormat(std::string_view name) {
  for (LogFormat f : {LogFormat::kDefault, LogFormat::kIso8601, LogFormat::kJson}) {
    if (name == LogFormatName(f)) return f;
  }
  return std::nullopt;
}

std::string FormatLogTime(std::chrono::system_clock::time_point time) {
  using std::chrono::duration_cast;
  const auto us = duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  // Floor division, so that an instant before 1970 still has 0..999999 us.
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(frac));
  return buf;
}

std::string JsonEscapeLog(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80) {
      const size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {  // not UTF-8: the byte's value, readable, in valid JSON
        out += "\\\\x";
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
        ++i;
        continue;
      }
      // U+2028/U+2029 end a line for JavaScript and some log viewers.
      if (n == 3 && b == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
          (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
           static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
        out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      } else {
        out.append(s.substr(i, n));
      }
      i += n;
      continue;
    }
    switch (b) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (b < 0x20 || b == 0x7f) {
          out += "\\u00";
          out += kHex[b >> 4];
          out += kHex[b & 0xf];
        } else {
          out += static_cast<char>(b);
        }
    }
    ++i;
  }
  return out;
}

std::string FormatLogLine(LogLevel level, std::string_view message) {
  std::string line;
  line.reserve(TextPrefix(level).size() + message.size() + 1);
  AppendTextLine(line, level, message);
  return line;
}

std::string FormatLogLine(LogFormat format, const LogRecord& r) {
  std::string line;
  switch (format) {
    case LogFormat::kDefault:
      return FormatLogLine(r.level, r.message);
    case LogFormat::kIso8601:
      line = FormatLogTime(r.time);
      line += ' ';
      AppendTextLine(line, r.level, r.message);
      return line;
    case LogFormat::kJson:
      break;
  }
  line.reserve(r.message.size() + 128);
  line += "{\"time\":\"";
  line += FormatLogTime(r.time);
  line += "\",\"level\":\"";
  line += JsonLevel(r.level);
  line += '"';
  if (r.level == LogLevel::kVerbose) {
    line += ",\"verbose_level\":";
    line += std::to_string(r.verbosity);
  }
  AppendJsonField(line, "component",
                  r.context.component.empty() ? std::string_view("server") : r.context.component);
  if (!r.context.model.empty()) AppendJsonField(line, "model", r.context.model);
  if (!r.context.request_id.empty()) AppendJsonField(line, "request_id", r.context.request_id);
  AppendJsonField(line, "message", r.message);
  line += "}\n";
  return line;
}

}  // namespace inferd
