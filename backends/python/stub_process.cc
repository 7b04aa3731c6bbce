// See stub_process.h.
#include "python/stub_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/backend_util.h"

extern char** environ;

namespace inferd_python {

using inferd_backend::Fail;

std::string PythonExecutable() {
  const char* p = std::getenv("INFERD_PYTHON_EXECUTABLE");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

std::string StubDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&StubDirectory), &info) == 0 || info.dli_fname == nullptr) {
    Fail(INFERD_ERROR_INTERNAL, "cannot find the Python backend's own library path");
  }
  std::string lib = info.dli_fname;
  const size_t slash = lib.rfind('/');
  return (slash == std::string::npos ? std::string(".") : lib.substr(0, slash)) + "/python";
}

namespace {

// One thread that lives as long as the process and does every fork.
class Spawner {
 public:
  static Spawner& Get() {
    static Spawner* s = new Spawner();  // never destroyed: the thread runs until exit
    return *s;
  }
  StubProcess Run(std::function<StubProcess()> f) {
    std::packaged_task<StubProcess()> task(std::move(f));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return result.get();
  }

 private:
  Spawner() {
    std::thread([this] {
      for (;;) {
        std::packaged_task<StubProcess()> task;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [&] { return !queue_.empty(); });
          task = std::move(queue_.front());
          queue_.pop_front();
        }
        task();
      }
    }).detach();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<StubProcess()>> queue_;
};

StubProcess ForkExec(const std::string& mode) {
  const std::string python = PythonExecutable();
  const std::string script = StubDirectory() + "/inferd_python_stub.py";
  if (access(script.c_str(), R_OK) != 0) {
    Fail(INFERD_ERROR_FAILED_PRECONDITION, "the Python backend's stub " + script +
                                               " is missing (install the backend directory whole)");
  }
  if (access(python.c_str(), X_OK) != 0) {
    Fail(INFERD_ERROR_FAILED_PRECONDITION,
         "the Python backend needs " + python + " (apt-get install python3 python3-numpy)");
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    Fail(INFERD_ERROR_RESOURCE_EXHAUSTED, std::string("socketpair: ") + strerror(errno));
  }
  const std::string parent = std::to_string(getpid());
  std::vector<std::string> args = {python, "-u", script, "3", parent, mode};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_store.emplace_back(*e);
  }
  std::vector<char*> envp;
  envp.reserve(env_store.size() + 1);
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t ppid = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(sv[0]);
    close(sv[1]);
    Fail(INFERD_ERROR_RESOURCE_EXHAUSTED, std::string("fork: ") + strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != ppid) _exit(127);
    if (sv[1] == 3) {
      fcntl(3, F_SETFD, 0);
    } else if (dup2(sv[1], 3) < 0) {  // dup2 clears FD_CLOEXEC on the copy
      _exit(127);
    }
    syscall(SYS_close_range, 4u, ~0u, 0u);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(sv[1]);
  return StubProcess{pid, sv[0]};
}

}  // namespace

StubProcess SpawnStub(const std::string& mode) {
  return Spawner::Get().Run([mode] { return ForkExec(mode); });
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (") + name + ")" : "");
  }
  return "stopped (status " + std::to_string(status) + ")";
}

}  // namespace inferd_python
