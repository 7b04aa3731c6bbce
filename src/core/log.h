// The server's log: one line per message on stderr, at the levels of
// Triton's flags --log-error, --log-warning, --log-info (each on by default)
// and --log-verbose=N (0, the default, is off; a verbose(n) message shows
// when 1 <= n <= N).
//
// Lines (tests, scripts and operators parse the info and always lines; keep
// their text):
//   error       "inferd: error: <message>"
//   warning     "inferd: warning: <message>"
//   info        "inferd: <message>"
//   verbose(n)  "inferd: verbose: <message>"
//   always      "inferd: <message>"   (LogAlways: printed whatever the flags;
//               the lines that say where the server listens, which launchers
//               read the ports from)
//
// Use:
//   INFERD_LOG(Warning) << "exit timeout reached with requests still in flight";
//   INFERD_VLOG(1) << "model '" << EscapeControl(name) << "' is READY";
// When the level is off, nothing after the macro is evaluated (no
// formatting). The message is kept on its line: a newline or carriage return
// in it is written as "\n" / "\r"; other text from clients, configs or
// backends is the caller's to escape (EscapeControl, core/sanitize.h).
//
// Threading: every function and macro is safe from any thread. Each line is
// written whole under a lock (one write(2) unless the kernel takes it in
// parts), so lines from different threads never interleave. Settings are
// process-wide (as stderr is) and may change at any time; a line being
// written when they change follows the old or the new ones.
//
// Errors: a failed write is dropped (there is nowhere left to report it).
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace inferd {

enum class LogLevel { kError, kWarning, kInfo, kVerbose };

struct LogSettings {
  bool error = true;    // --log-error
  bool warning = true;  // --log-warning
  bool info = true;     // --log-info
  int verbose = 0;      // --log-verbose: verbose(n) messages with n <= this
  int fd = 2;           // where lines go (stderr; tests pass a file)
};

// Replaces the process's settings.
void SetLogSettings(const LogSettings& settings);
LogSettings GetLogSettings();

// Whether a message at `level` (verbose: of verbosity `verbosity` >= 1) is
// written under the current settings. A relaxed atomic load or two.
bool LogEnabled(LogLevel level, int verbosity = 1);

// The line for a message, newline included (the formats above).
std::string FormatLogLine(LogLevel level, std::string_view message);

// Writes `message` at `level` if enabled.
void LogWrite(LogLevel level, std::string_view message, int verbosity = 1);
// Writes "inferd: <message>" whatever the settings.
void LogAlways(std::string_view message);

// One message being composed by the macros below; written when destroyed
// (at the end of the statement).
class LogMessage {
 public:
  LogMessage(LogLevel level, int verbosity) : level_(level), verbosity_(verbosity) {}
  ~LogMessage() { LogWrite(level_, stream_.view(), verbosity_); }
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  int verbosity_;
  std::ostringstream stream_;
};

// Turns the streamed expression into void, so that the macros are one
// expression (safe inside an unbraced if/else).
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace inferd

// INFERD_LOG(Error|Warning|Info) and INFERD_VLOG(n): see the top of this file.
// INFERD_LOG_AT is an unparenthesised conditional on purpose: what follows
// the macro (`<< a << b`) must bind to the stream inside it.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define INFERD_LOG(severity) INFERD_LOG_AT(::inferd::LogLevel::k##severity, 1)
#define INFERD_VLOG(n) INFERD_LOG_AT(::inferd::LogLevel::kVerbose, (n))
#define INFERD_LOG_AT(level, verbosity)       \
  !::inferd::LogEnabled((level), (verbosity)) \
      ? (void)0                               \
      : ::inferd::LogVoidify() & ::inferd::LogMessage((level), (verbosity)).stream()
// NOLINTEND(bugprone-macro-parentheses)
