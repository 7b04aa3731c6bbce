// See python_auto_complete.h.
#include "repository/python_auto_complete.h"

#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "repository/model_config_util.h"

extern char** environ;

namespace inferd {
namespace {

std::string PythonExecutable() {
  const char* p = std::getenv("INFERD_PYTHON_EXECUTABLE");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

// Removes a temporary directory on every path out.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

// Runs the stub once: sends `request`, returns its one reply.
StatusOr<std::string> RunStub(const std::string& script, const std::string& request,
                              std::chrono::seconds timeout) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return Internal(std::string("socketpair: ") + strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);  // clears FD_CLOEXEC on 3
  const std::string python = PythonExecutable();
  const std::string parent = std::to_string(getpid());
  std::vector<std::string> args = {python, script, "3", parent, "autocomplete"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return InvalidArgument("cannot start " + python + ": " + strerror(rc));
  }
  std::string reply;
  Status status = Status::Ok();
  if (send(sv[0], request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    status = Internal(std::string("cannot talk to the auto-complete stub: ") + strerror(errno));
  } else {
    pollfd p{sv[0], POLLIN, 0};
    int n;
    do {
      n = poll(&p, 1, static_cast<int>(timeout.count() * 1000));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
      status = InvalidArgument("auto_complete_config did not return within " +
                               std::to_string(timeout.count()) + " s");
    } else {
      std::vector<char> buf(1 << 20);
      const ssize_t got = recv(sv[0], buf.data(), buf.size(), 0);
      if (got <= 0) {
        status = InvalidArgument("the auto-complete stub exited without an answer");
      } else {
        reply.assign(buf.data(), static_cast<size_t>(got));
      }
    }
  }
  close(sv[0]);
  if (!status.ok()) kill(pid, SIGKILL);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (!status.ok()) return status;
  return reply;
}

}  // namespace

Status PythonAutoComplete(const RepositorySource& source, const std::string& name,
                          const PythonAutoCompleteOptions& options,
                          inference::ModelConfig& config) {
  if (!options.enabled || options.stub_directory.empty() || config.backend() != "python") {
    return Status::Ok();
  }
  auto versions = source.ListVersions(name);
  if (!versions.ok() || versions->empty()) return Status::Ok();
  const std::string file =
      config.default_model_filename().empty() ? "model.py" : config.default_model_filename();
  const std::string version = std::to_string(*versions->rbegin());
  auto code = source.ReadFile(name, version + "/" + file);
  if (!code.ok()) return Status::Ok();
  // Only a model that defines the hook pays for a Python start.
  if (code->find("auto_complete_config") == std::string::npos) return Status::Ok();
  const std::string script = options.stub_directory + "/inferd_python_stub.py";
  if (access(script.c_str(), R_OK) != 0) return Status::Ok();

  TempDir tmp;
  std::string pattern = (std::filesystem::temp_directory_path() / "inferd-autocomplete-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return Internal(std::string("mkdtemp: ") + strerror(errno));
  }
  tmp.path = pattern;
  const std::string model_dir = tmp.path + "/" + name;
  const std::string version_dir = model_dir + "/" + version;
  std::error_code ec;
  std::filesystem::create_directories(version_dir, ec);
  {
    std::ofstream out(version_dir + "/" + file, std::ios::binary);
    out << *code;
    if (!out) return Internal("cannot write " + version_dir + "/" + file);
  }

  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  const std::string config_json = ModelConfigToJson(config);
  w.StartObject();
  w.Key("t");
  w.String("autocomplete");
  w.Key("config");
  w.String(config_json.c_str(), static_cast<rapidjson::SizeType>(config_json.size()));
  w.Key("model_name");
  w.String(name.c_str());
  w.Key("model_file");
  w.String((version_dir + "/" + file).c_str());
  w.Key("model_dir");
  w.String(model_dir.c_str());
  w.Key("version_dir");
  w.String(version_dir.c_str());
  w.EndObject();
  auto reply = RunStub(script, sb.GetString(), options.timeout);
  if (!reply.ok()) return reply.status().WithPrefix("auto_complete_config of model '" + name + "'");
  rapidjson::Document d;
  d.Parse(reply->c_str());
  if (d.HasParseError() || !d.IsObject()) {
    return Internal("auto_complete_config of model '" + name + "': bad answer from the stub");
  }
  if (d.HasMember("error") && d["error"].IsString()) {
    return InvalidArgument("auto_complete_config of model '" + name +
                           "' failed: " + d["error"].GetString());
  }
  if (!d.HasMember("config") || !d["config"].IsString()) return Status::Ok();  // no hook
  auto completed = ParseModelConfigJson(d["config"].GetString());
  if (!completed.ok()) {
    return completed.status().WithPrefix("auto_complete_config of model '" + name +
                                         "' returned a config inferd cannot read");
  }
  config = std::move(*completed);
  return Status::Ok();
}

}  // namespace inferd
