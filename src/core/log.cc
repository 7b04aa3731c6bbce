#include "core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/thread_annotations.h"

namespace inferd {
namespace {

// Atomics, not a lock: LogEnabled runs on every macro, hot paths included.
std::atomic<bool> g_error{true};
std::atomic<bool> g_warning{true};
std::atomic<bool> g_info{true};
std::atomic<int> g_verbose{0};
std::atomic<int> g_format{static_cast<int>(LogFormat::kDefault)};
std::atomic<int> g_fd{2};
std::atomic<bool> g_to_file{false};  // --log-file given: always lines go to stderr too

// Serialises writes, so that a line longer than the pipe's atomic write size
// (PIPE_BUF) still comes out whole.
Mutex g_write_mu;

// The --log-file path, for GetLogSettings (read by the logging extension
// only, never on a hot path).
Mutex g_file_mu;
std::string g_file INFERD_GUARDED_BY(g_file_mu);

void WriteAll(int fd, const std::string& line) INFERD_EXCLUDES(g_write_mu) {
  MutexLock lock(g_write_mu);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

LogFormat CurrentFormat() {
  return static_cast<LogFormat>(g_format.load(std::memory_order_relaxed));
}

LogRecord Record(LogLevel level, int verbosity, std::string_view message,
                 const LogContext& context) {
  LogRecord r;
  r.level = level;
  r.verbosity = verbosity;
  r.message = message;
  r.context = context;
  r.time = std::chrono::system_clock::now();
  return r;
}

}  // namespace

void SetLogSettings(const LogSettings& settings) {
  g_error.store(settings.error, std::memory_order_relaxed);
  g_warning.store(settings.warning, std::memory_order_relaxed);
  g_info.store(settings.info, std::memory_order_relaxed);
  g_verbose.store(settings.verbose, std::memory_order_relaxed);
  g_format.store(static_cast<int>(settings.format), std::memory_order_relaxed);
  g_fd.store(settings.fd, std::memory_order_relaxed);
  g_to_file.store(!settings.file.empty(), std::memory_order_relaxed);
  MutexLock lock(g_file_mu);
  g_file = settings.file;
}

LogSettings GetLogSettings() {
  LogSettings s;
  s.error = g_error.load(std::memory_order_relaxed);
  s.warning = g_warning.load(std::memory_order_relaxed);
  s.info = g_info.load(std::memory_order_relaxed);
  s.verbose = g_verbose.load(std::memory_order_relaxed);
  s.format = CurrentFormat();
  s.fd = g_fd.load(std::memory_order_relaxed);
  MutexLock lock(g_file_mu);
  s.file = g_file;
  return s;
}

Status OpenLogFile(LogSettings settings) {
  if (!settings.file.empty()) {
    // Never closed: the log is written until the process exits.
    const int fd = ::open(settings.file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      return InvalidArgument("--log-file: cannot open '" + settings.file +
                             "': " + std::strerror(errno));
    }
    settings.fd = fd;
  }
  SetLogSettings(settings);
  return Status::Ok();
}

bool LogEnabled(LogLevel level, int verbosity) {
  switch (level) {
    case LogLevel::kError:
      return g_error.load(std::memory_order_relaxed);
    case LogLevel::kWarning:
      return g_warning.load(std::memory_order_relaxed);
    case LogLevel::kInfo:
      return g_info.load(std::memory_order_relaxed);
    case LogLevel::kVerbose:
      return verbosity >= 1 && verbosity <= g_verbose.load(std::memory_order_relaxed);
  }
  return false;
}

void LogWrite(LogLevel level, std::string_view message, int verbosity, const LogContext& context) {
  if (!LogEnabled(level, verbosity)) return;
  WriteAll(g_fd.load(std::memory_order_relaxed),
           FormatLogLine(CurrentFormat(), Record(level, verbosity, message, context)));
}

void LogAlways(std::string_view message, const LogContext& context) {
  const std::string line =
      FormatLogLine(CurrentFormat(), Record(LogLevel::kInfo, 1, message, context));
  const int fd = g_fd.load(std::memory_order_relaxed);
  WriteAll(fd, line);
  if (fd != 2 && g_to_file.load(std::memory_order_relaxed)) WriteAll(2, line);
}

void LogPassOn(LogLevel level, std::string_view component, std::string_view text,
               std::string_view message) {
  if (!LogEnabled(level)) return;
  const LogFormat format = CurrentFormat();
  // The text formats keep the line as it was: `text` as an info line's
  // message (no level word added).
  const bool json = format == LogFormat::kJson;
  LogRecord r =
      Record(json ? level : LogLevel::kInfo, 1, json ? message : text, LogContext(component));
  WriteAll(g_fd.load(std::memory_order_relaxed), FormatLogLine(format, r));
}

}  // namespace inferd
