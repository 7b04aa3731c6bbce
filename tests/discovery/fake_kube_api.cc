#include "fake_kube_api.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace inferd::discovery::testing {

FakeKubeApi::FakeKubeApi(const std::string& dir, const std::string& token) : dir_(dir) {
  int in[2];
  int out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    error_ = "pipe failed";
    return;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    const char* argv[] = {"/usr/bin/python3", INFERD_FAKE_KUBE_API, dir.c_str(), token.c_str(),
                          nullptr};
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  std::string line = ReadLine();
  if (line.rfind("port ", 0) != 0) {
    error_ = "the fake did not start: '" + line + "'";
    return;
  }
  port_ = std::stoi(line.substr(5));
}

FakeKubeApi::~FakeKubeApi() {
  if (to_child_ >= 0) ::close(to_child_);  // the fake exits at the end of its stdin
  if (from_child_ >= 0) ::close(from_child_);
  if (pid_ <= 0) return;
  for (int i = 0; i < 500; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string FakeKubeApi::ReadLine() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{from_child_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n <= 0) return "";
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

std::string FakeKubeApi::Command(const std::string& json) {
  std::string line = json + "\n";
  if (::write(to_child_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return "";
  return ReadLine();
}

}  // namespace inferd::discovery::testing
