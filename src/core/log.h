// The server's log: one line per message on stderr (or --log-file), at the
// levels of Triton's flags --log-error, --log-warning, --log-info (each on by
// default) and --log-verbose=N (0, the default, is off; a verbose(n)
// message shows when 1 <= n <= N), in the format of --log-format. Every
// setting may also be changed at run time (the logging extension,
// /v2/logging and gRPC LogSettings: core/log_control.h). docs/logging.md.
//
// Formats (tests, scripts and operators parse the info and always lines;
// keep their text):
//   default   error       "inferd: error: <message>"
//             warning     "inferd: warning: <message>"
//             info        "inferd: <message>"
//             verbose(n)  "inferd: verbose: <message>"
//             always      "inferd: <message>"   (LogAlways: printed whatever
//                         the flags; the lines that say where the server
//                         listens, which launchers read the ports from)
//   ISO8601   the default line after a UTC timestamp with microseconds and
//             one space: "2025-01-31T08:09:10.123456Z inferd: <...>"
//   json      one JSON object per line (log pipelines):
//             {"time":"2025-01-31T08:09:10.123456Z","level":"info",
//              "component":"http","model":"m","request_id":"42",
//              "message":"..."}
//             level: "error", "warning", "info" (always lines too) or
//             "verbose", the latter with "verbose_level":n after it;
//             component: the message's (LogContext), "server" when it names
//             none; model and request_id only when the message has them.
// Always lines follow the format too; launchers that set a format parse
// that format (tests/e2e/harness.py reads all three).
//
// Use:
//   INFERD_LOG(Warning) << "exit timeout reached with requests still in flight";
//   INFERD_VLOG(1) << "model '" << EscapeControl(name) << "' is READY";
//   INFERD_VLOG_CTX(1, "http", request.model_name, request.id) << "decoded ...";
// The _CTX forms take the LogContext's members (component, model, request
// id): string views that must live until the end of the statement (a
// temporary made in the statement does). When the level is off, nothing
// after the macro is evaluated (no formatting, no context). The message is
// kept on its line: in the text formats a newline or carriage return in it
// is written as "\n" / "\r" (other text from clients, configs or backends is
// the caller's to escape: EscapeControl, core/sanitize.h); JSON escapes
// every control character, and writes a byte that is not UTF-8 as "\xNN".
//
// Threading: every function and macro is safe from any thread. Each line is
// written whole under a lock (one write(2) unless the kernel takes it in
// parts), so lines from different threads never interleave. Settings are
// process-wide (as stderr is) and may change at any time; a line being
// written when they change follows the old or the new ones.
//
// Errors: a failed write is dropped (there is nowhere left to report it).
#pragma once

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "core/status.h"

namespace inferd {

enum class LogLevel { kError, kWarning, kInfo, kVerbose };
enum class LogFormat { kDefault, kIso8601, kJson };

// "default", "ISO8601", "json" (the names of --log-format and the API).
std::string_view LogFormatName(LogFormat format);
// The format of a name above (exact case); nullopt for anything else.
std::optional<LogFormat> ParseLogFormat(std::string_view name);

struct LogSettings {
  bool error = true;                       // --log-error
  bool warning = true;                     // --log-warning
  bool info = true;                        // --log-info
  int verbose = 0;                         // --log-verbose: verbose(n) messages with n <= this
  LogFormat format = LogFormat::kDefault;  // --log-format
  // --log-file: "" is stderr. OpenLogFile turns a path into `fd`; here it is
  // what the logging extension reports.
  std::string file;
  int fd = 2;  // where lines go (stderr; the log file; tests pass a file)
};

// Replaces the process's settings.
void SetLogSettings(const LogSettings& settings);
LogSettings GetLogSettings();

// Opens settings.file (when set) for appending, created 0644, then applies
// the settings with its descriptor. The error names the path.
Status OpenLogFile(LogSettings settings);

// Whether a message at `level` (verbose: of verbosity `verbosity` >= 1) is
// written under the current settings. A relaxed atomic load or two.
bool LogEnabled(LogLevel level, int verbosity = 1);

// Where a message comes from: the JSON format's fields (the text formats do
// not show them; put what a reader needs in the message). Empty: absent.
struct LogContext {
  LogContext() = default;
  explicit LogContext(std::string_view component_, std::string_view model_ = {},
                      std::string_view request_id_ = {})
      : component(component_), model(model_), request_id(request_id_) {}

  std::string_view component;   // "http", "grpc", "scheduler", "backend"...; "" = "server"
  std::string_view model;       // the model a request is for
  std::string_view request_id;  // the request's id, as the client gave it
};

// One message, for the formatter.
struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  int verbosity = 1;  // verbose messages only
  std::string_view message;
  LogContext context;
  std::chrono::system_clock::time_point time;
};

// The line for `record` in `format`, newline included (the formats above).
std::string FormatLogLine(LogFormat format, const LogRecord& record);
// The default format's line for a message (no time, no context).
std::string FormatLogLine(LogLevel level, std::string_view message);
// "2025-01-31T08:09:10.123456Z": UTC, microseconds.
std::string FormatLogTime(std::chrono::system_clock::time_point time);
// `s` as the inside of a JSON string: '"', '\\' and every control character
// escaped (\n, \t... or \u00XX), U+2028/U+2029 as \u2028/\u2029, and each
// byte that is not part of well-formed UTF-8 as the text "\xNN" (its
// backslash escaped: "\\xNN" in the JSON text).
std::string JsonEscapeLog(std::string_view s);

// Writes `message` at `level` if enabled.
void LogWrite(LogLevel level, std::string_view message, int verbosity = 1,
              const LogContext& context = {});
// Writes an info line whatever the settings (the default format's
// "inferd: <message>"). With a log file, the line also goes to stderr, where
// launchers look for it.
void LogAlways(std::string_view message, const LogContext& context = {});
// A line passed on from a backend or a library, which had its own text
// before the formats existed: `text` is the whole line after "inferd: " in
// the text formats (as it always was), `message` the message alone in JSON,
// with `component`. Written if `level` is enabled.
void LogPassOn(LogLevel level, std::string_view component, std::string_view text,
               std::string_view message);

// One message being composed by the macros below; written when destroyed
// (at the end of the statement).
class LogMessage {
 public:
  LogMessage(LogLevel level, int verbosity, LogContext context = {})
      : level_(level), verbosity_(verbosity), context_(context) {}
  ~LogMessage() { LogWrite(level_, stream_.view(), verbosity_, context_); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  int verbosity_;
  LogContext context_;
  std::ostringstream stream_;
};

// Turns the streamed expression into void, so that the macros are one
// expression (safe inside an unbraced if/else).
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace inferd

// INFERD_LOG(Error|Warning|Info), INFERD_VLOG(n) and their _CTX forms: see
// the top of this file. INFERD_LOG_AT is an unparenthesised conditional on
// purpose: what follows the macro (`<< a << b`) must bind to the stream
// inside it.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define INFERD_LOG(severity) INFERD_LOG_AT(::inferd::LogLevel::k##severity, 1)
#define INFERD_VLOG(n) INFERD_LOG_AT(::inferd::LogLevel::kVerbose, (n))
#define INFERD_LOG_CTX(severity, ...) \
  INFERD_LOG_AT(::inferd::LogLevel::k##severity, 1, ::inferd::LogContext{__VA_ARGS__})
#define INFERD_VLOG_CTX(n, ...) \
  INFERD_LOG_AT(::inferd::LogLevel::kVerbose, (n), ::inferd::LogContext{__VA_ARGS__})
#define INFERD_LOG_AT(level, verbosity, ...)  \
  !::inferd::LogEnabled((level), (verbosity)) \
      ? (void)0                               \
      : ::inferd::LogVoidify() &              \
            ::inferd::LogMessage((level), (verbosity)__VA_OPT__(, ) __VA_ARGS__).stream()
// NOLINTEND(bugprone-macro-parentheses)
