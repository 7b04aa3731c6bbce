#include "inferd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace inferd::testing {

std::string TestModelsDir() { return INFERD_TEST_MODELS_DIR; }

std::string ReadTestConfig(const std::string& name) {
  const std::string path = TestModelsDir() + "/" + name + "/config.pbtxt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no model '" + name + "' in the test repository: " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TempRepository::TempRepository() {
  char tmpl[] = "/tmp/inferd-grpc-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;
}

TempRepository::~TempRepository() {
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

void TempRepository::CopyTestModels(const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  for (const auto& name : names) {
    const fs::path from = fs::path(TestModelsDir()) / name;
    if (!fs::is_regular_file(from / "config.pbtxt")) {
      throw std::runtime_error("no model '" + name + "' in the test repository " + TestModelsDir());
    }
    std::error_code ec;
    fs::copy(from, fs::path(root_) / name,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec) throw std::runtime_error("copying test model '" + name + "': " + ec.message());
  }
}

void TempRepository::AddModel(const std::string& name, const std::string& config_pbtxt) {
  const std::filesystem::path dir = std::filesystem::path(root_) / name;
  std::filesystem::create_directories(dir / "1");
  std::ofstream(dir / "config.pbtxt") << config_pbtxt;
}

InferdProcess::InferdProcess(std::vector<std::string> args, std::string binary)
    : args_(std::move(args)), binary_(binary.empty() ? Binary() : std::move(binary)) {}

InferdProcess::~InferdProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    WaitExit(5000);
  }
  if (reader_.joinable()) reader_.join();
}

std::string InferdProcess::Binary() {
  if (const char* env = getenv("INFERD_BIN"); env != nullptr && *env != '\0') return env;
  return INFERD_BIN_DEFAULT;
}

bool InferdProcess::Start(std::string* error, bool want_grpc, bool want_http, int timeout_ms) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = "pipe failed";
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  const std::string& binary = binary_;
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args_.begin(), args_.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    pid_ = -1;
    *error = "cannot start " + binary + ": " + strerror(rc);
    return false;
  }
  reader_ = std::thread([this, fd = fds[0]] { ReadLoop(fd); });
  std::unique_lock<std::mutex> lock(mu_);
  auto listening = [&] { return (!want_grpc || grpc_port_ > 0) && (!want_http || http_port_ > 0); };
  const bool ok = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                               [&] { return eof_ || listening(); });
  if (ok && listening()) return true;
  lock.unlock();
  *error = std::string(ok ? "inferd exited before listening" : "inferd did not listen in time") +
           "\n---- inferd output ----\n" + Log();
  return false;
}

namespace {

// The port of a line "<prefix><digits>", else 0.
int PortAfter(const std::string& line, const std::string& prefix) {
  if (line.rfind(prefix, 0) != 0 || line.size() == prefix.size()) return 0;
  int port = 0;
  for (size_t i = prefix.size(); i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9' || port > 65535) return 0;
    port = port * 10 + (line[i] - '0');
  }
  return port;
}

}  // namespace

void InferdProcess::ReadLoop(int fd) {
  std::string partial;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      std::lock_guard<std::mutex> lock(mu_);
      if (int p = PortAfter(line, "inferd: gRPC listening on 127.0.0.1:")) grpc_port_ = p;
      if (int p = PortAfter(line, "inferd: HTTP listening on 127.0.0.1:")) http_port_ = p;
      lines_.push_back(std::move(line));
      cv_.notify_all();
    }
  }
  close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  if (!partial.empty()) lines_.push_back(partial);
  eof_ = true;
  cv_.notify_all();
}

int InferdProcess::WaitExit(int timeout_ms) {
  if (pid_ <= 0) return -1;
  if (exited_) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (WIFSIGNALED(status)) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back("[test] inferd died from signal " + std::to_string(WTERMSIG(status)));
      }
      if (reader_.joinable()) reader_.join();
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void InferdProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

int InferdProcess::Stop(int timeout_ms) {
  if (pid_ <= 0) return -1;
  if (!exited_) kill(pid_, SIGTERM);
  int code = WaitExit(timeout_ms);
  if (!exited_) {
    kill(pid_, SIGKILL);
    WaitExit(5000);
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back("[test] inferd did not stop within " + std::to_string(timeout_ms) +
                     " ms of SIGTERM; killed");
    code = -1;
  }
  return SanitizerReport().empty() ? code : kSanitizerReported;
}

std::string InferdProcess::SanitizerReport() {
  // The first line of a report, as tests/e2e/harness.py's SANITIZER_REPORT_RE
  // (UBSan's is "file:line:column: runtime error: ..."). Text that only
  // mentions an error (a model's message) does not match.
  static const std::regex kReport(
      "(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer"
      "|Sanitizer CHECK failed|Sanitizer has encountered a fatal error"
      "|^\\S+:\\d+:\\d+: runtime error: ");
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (!std::regex_search(lines_[i], kReport)) continue;
    std::string report;
    for (size_t j = i; j < lines_.size() && j < i + 40; ++j) report += lines_[j] + "\n";
    return report;
  }
  return "";
}

bool InferdProcess::Alive() {
  if (pid_ <= 0 || exited_) return false;
  return WaitExit(0) == -1 && !exited_;
}

std::string InferdProcess::Log() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& l : lines_) out += l + "\n";
  return out;
}

}  // namespace inferd::testing
