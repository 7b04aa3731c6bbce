// The C++ tests' one process launcher (gRPC end-to-end, libinferclient
// end-to-end): a real `inferd` process on free loopback ports, and a
// temporary model repository filled from the canonical test repository.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferd::testing {

// The canonical test repository (tests/data/models): the small models every
// test shares, each defined once. Compiled in as INFERD_TEST_MODELS_DIR.
std::string TestModelsDir();
// The config.pbtxt text of one of its models; throws std::runtime_error if
// there is no such model.
std::string ReadTestConfig(const std::string& name);

// A model repository in a fresh temporary directory, removed on destruction.
// Throws std::runtime_error when the directory or a copy cannot be made.
class TempRepository {
 public:
  TempRepository();
  ~TempRepository();
  TempRepository(const TempRepository&) = delete;
  TempRepository& operator=(const TempRepository&) = delete;

  // Copies these models of the canonical test repository into this one
  // (links followed, so the copy can be changed freely).
  void CopyTestModels(const std::vector<std::string>& names);
  // Writes <root>/<name>/config.pbtxt and the version directory "1": for a
  // test's own model or a deliberate variant, never a copy of a canonical one.
  void AddModel(const std::string& name, const std::string& config_pbtxt);
  const std::string& path() const { return root_; }

 private:
  std::string root_;
};

// One inferd process. Its stdout and stderr are collected (for failure
// messages); the "HTTP/gRPC listening on <addr>:<port>" lines give the ports.
class InferdProcess {
 public:
  // `args` follow the binary; the binary is `binary` when given, else
  // $INFERD_BIN, else the path CMake compiled in.
  explicit InferdProcess(std::vector<std::string> args, std::string binary = "");
  ~InferdProcess();  // SIGKILL if still running
  InferdProcess(const InferdProcess&) = delete;
  InferdProcess& operator=(const InferdProcess&) = delete;

  // Starts the process and waits until it listens on gRPC (when `want_grpc`)
  // and HTTP (when `want_http`). False, with the reason and the log in
  // `error`, otherwise (also when the process exits first).
  bool Start(std::string* error, bool want_grpc = true, bool want_http = true,
             int timeout_ms = 30000);

  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_port_; }
  std::string grpc_target() const { return "127.0.0.1:" + std::to_string(grpc_port_); }

  // Sends SIGTERM and waits; the exit code, or -1 if it had to be killed
  // after `timeout_ms` (or died from a signal), or kSanitizerReported when
  // its output holds a sanitizer report whatever the exit code (a leak found
  // at exit comes after every request was answered; `EXPECT_EQ(Stop(), 0)`
  // is how a test fails on it). The report is in Log().
  int Stop(int timeout_ms = 20000);
  static constexpr int kSanitizerReported = -2;
  // The output from the first line of a sanitizer report (ASan, LSan, TSan,
  // UBSan), or "" if there is none so far.
  std::string SanitizerReport();
  // Waits for the process to exit on its own; exit code, or -1.
  int WaitExit(int timeout_ms);
  // Sends a signal without waiting.
  void Signal(int sig);
  bool Alive();

  // Everything the process printed so far.
  std::string Log();
  static std::string Binary();

 private:
  void ReadLoop(int fd);

  std::vector<std::string> args_;
  std::string binary_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
  bool exited_ = false;
  std::thread reader_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;  // guarded by mu_
  int grpc_port_ = 0;               // guarded by mu_ until Start returns
  int http_port_ = 0;
  bool eof_ = false;
};

}  // namespace inferd::testing
