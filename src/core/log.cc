#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "core/thread_annotations.h"

namespace inferd {
namespace {

// Atomics, not a lock: LogEnabled runs on every macro, hot paths included.
std::atomic<bool> g_error{true};
std::atomic<bool> g_warning{true};
std::atomic<bool> g_info{true};
std::atomic<int> g_verbose{0};
std::atomic<int> g_fd{2};

// Serialises writes, so that a line longer than the pipe's atomic write size
// (PIPE_BUF) still comes out whole.
Mutex g_write_mu;

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

std::string_view Prefix(LogLevel level) {
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

}  // namespace

void SetLogSettings(const LogSettings& settings) {
  g_error.store(settings.error, std::memory_order_relaxed);
  g_warning.store(settings.warning, std::memory_order_relaxed);
  g_info.store(settings.info, std::memory_order_relaxed);
  g_verbose.store(settings.verbose, std::memory_order_relaxed);
  g_fd.store(settings.fd, std::memory_order_relaxed);
}

LogSettings GetLogSettings() {
  LogSettings s;
  s.error = g_error.load(std::memory_order_relaxed);
  s.warning = g_warning.load(std::memory_order_relaxed);
  s.info = g_info.load(std::memory_order_relaxed);
  s.verbose = g_verbose.load(std::memory_order_relaxed);
  s.fd = g_fd.load(std::memory_order_relaxed);
  return s;
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

std::string FormatLogLine(LogLevel level, std::string_view message) {
  const std::string_view prefix = Prefix(level);
  std::string line;
  line.reserve(prefix.size() + message.size() + 1);
  line += prefix;
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
  return line;
}

void LogWrite(LogLevel level, std::string_view message, int verbosity) {
  if (!LogEnabled(level, verbosity)) return;
  WriteAll(g_fd.load(std::memory_order_relaxed), FormatLogLine(level, message));
}

void LogAlways(std::string_view message) {
  WriteAll(g_fd.load(std::memory_order_relaxed), FormatLogLine(LogLevel::kInfo, message));
}

}  // namespace inferd
