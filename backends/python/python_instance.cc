// PythonInstance's lifecycle: starting the stub, its reader thread, noticing
// its death, stopping it. See python_model.h.
#include <poll.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "python/python_model.h"
#include "python/stub_process.h"

namespace inferd_python {

using inferd_backend::Fail;
using inferd_backend::Host;

namespace {

// Grace periods when unloading: finalize(), then SIGTERM, then SIGKILL.
constexpr int64_t kFinalizeGraceMs = 30000;
constexpr int64_t kTermGraceMs = 3000;

const char* KindName(InferdInstanceKind k) {
  return k == INFERD_INSTANCE_GPU ? "GPU" : k == INFERD_INSTANCE_MODEL ? "MODEL" : "CPU";
}

}  // namespace

PythonInstance::PythonInstance(PythonModel& model, const InferdInstanceInfo& info)
    : model_(model), name_(info.name), kind_(KindName(info.kind)), device_id_(info.device_id) {
  const InferdModelInfo& m = model.info();
  StubProcess p = SpawnStub("instance");
  pid_ = p.pid;
  link_ = std::make_shared<StubLink>(p.fd);
  reader_ = std::thread([this] { ReaderLoop(); });

  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("t");
  w.String("init");
  w.Key("args");
  w.StartObject();
  auto kv = [&](const char* k, const std::string& v) {
    w.Key(k);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  kv("model_config", m.config_json ? m.config_json : "{}");
  kv("model_instance_kind", kind_);
  kv("model_instance_name", name_);
  kv("model_instance_device_id", std::to_string(device_id_));
  kv("model_repository", m.model_directory);
  kv("model_version", std::to_string(m.version));
  kv("model_name", m.name);
  w.EndObject();
  kv("model_file", model.model_file());
  kv("model_dir", m.model_directory);
  kv("version_dir", m.version_directory);
  w.Key("decoupled");
  w.Bool(model.decoupled());
  w.EndObject();
  std::string error;
  try {
    link_->channel.Send(sb.GetString());
    Message reply = WaitReply("init_done", 0, "initialize");
    const auto& e = reply.doc["error"];
    if (e.IsString()) error = e.GetString();
  } catch (const inferd_backend::BackendError& e) {
    error = e.what();
  }
  if (error.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = !dead_;
  } else {
    StopStub();
    Fail(INFERD_ERROR_INTERNAL, "Python model '" + std::string(m.name) + "' instance '" + name_ +
                                    "' failed to initialize: " + error);
  }
}

PythonInstance::~PythonInstance() { StopStub(); }

void PythonInstance::StopStub() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  const bool alive = !gone_;
  const bool talk = !dead_;
  dead_ = true;
  if (death_.empty()) death_ = "the model is being unloaded";
  lock.unlock();
  if (alive && talk && link_->channel.Send("{\"t\":\"fini\"}")) {
    // Read what finalize() says (log lines, "fini_done") until the stub
    // closes the channel: the reader may not be watching it (ReaderLoop).
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kFinalizeGraceMs);
    {
      std::lock_guard<std::mutex> role(read_mu_);
      for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{link_->channel.fd(), POLLIN, 0};
        const int n = poll(&p, 1, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || ReadOne(true) == Channel::Received::kClosed) break;
      }
    }
    lock.lock();
    cv_.wait_until(lock, deadline, [&] { return gone_; });
    lock.unlock();
  }
  lock.lock();
  if (!gone_) {
    kill(pid_, SIGTERM);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(kTermGraceMs), [&] { return gone_; })) {
      kill(pid_, SIGKILL);
    }
  }
  lock.unlock();
  link_->channel.Shutdown();
  if (reader_.joinable()) reader_.join();
  // Whatever the stub left unanswered.
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [key, p] : pending_) {
    FailPending(p, INFERD_ERROR_UNAVAILABLE, "Python model instance '" + name_ + "': " + death_);
  }
  pending_.clear();
}

void PythonInstance::ReaderLoop() {
  // Watches the stub's exit (pidfd) and reads the channel while no Execute
  // does. Once initialize() returned, a model that is not decoupled has
  // nothing to say outside execute (BLS and response senders belong inside
  // it; a log line from another thread waits for the next execute), so the
  // reader stops reading the channel: it would only wake with every answer
  // Execute reads itself and compete for the CPU.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  for (;;) {
    bool watch_channel;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !executing_; });
      watch_channel = !ready_ || model_.decoupled() || pidfd < 0;
    }
    pollfd p[2] = {{pidfd, POLLIN, 0}, {watch_channel ? link_->channel.fd() : -1, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents != 0) break;  // the stub exited
    if (p[1].revents == 0) continue;
    std::lock_guard<std::mutex> role(read_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (executing_) continue;  // Execute reads this one
    }
    if (ReadOne(true) == Channel::Received::kClosed) break;
  }
  if (pidfd >= 0) close(pidfd);
  OnStubGone();
}

Channel::Received PythonInstance::ReadOne(bool nonblocking) {
  std::vector<int> fds;
  const Channel::Received got = link_->channel.Recv(&text_, &fds, nonblocking);
  if (got != Channel::Received::kMessage) {
    for (int fd : fds) close(fd);
    return got;
  }
  Message m;
  m.doc.Parse(text_.data(), text_.size());
  if (m.doc.HasParseError() || !m.doc.IsObject() || !m.doc.HasMember("t") ||
      !m.doc["t"].IsString()) {
    for (int fd : fds) close(fd);
    Host().log(INFERD_LOG_ERROR,
               ("Python instance '" + name_ + "': bad message from its stub").c_str());
    return got;
  }
  try {
    MapRegions(m.doc, fds);
    Dispatch(std::move(m));
  } catch (const std::exception& e) {
    Host().log(INFERD_LOG_ERROR, ("Python instance '" + name_ + "': " + e.what()).c_str());
  }
  return got;
}

PythonInstance::Message PythonInstance::ExecWait(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool closed = false;
  bool timed_out = false;
  {
    std::unique_lock<std::mutex> role(read_mu_);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (reply_.has_value() || dead_) break;
      }
      if (timeout_ms <= 0) {  // no deadline: one blocking read, no poll
        if (ReadOne(false) == Channel::Received::kClosed) {
          closed = true;
          break;
        }
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const int wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
      pollfd p{link_->channel.fd(), POLLIN, 0};
      const int n = poll(&p, 1, wait_ms);
      if (n == 0) {
        timed_out = true;
        break;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        closed = true;
        break;
      }
      if (ReadOne(true) == Channel::Received::kClosed) {
        closed = true;
        break;
      }
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  executing_ = false;
  cv_.notify_all();
  if (timed_out && !reply_.has_value()) TimedOut(lock, "execute", timeout_ms);
  if (closed) cv_.wait(lock, [&] { return gone_; });  // the reader reaps the stub
  if (!reply_.has_value()) {
    Fail(INFERD_ERROR_UNAVAILABLE, "Python model '" + std::string(model_.info().name) +
                                       "' instance '" + name_ + "': " + death_);
  }
  Message m = std::move(*reply_);
  reply_.reset();
  if (std::string(m.doc["t"].GetString()) != "exec_done") {
    Fail(INFERD_ERROR_INTERNAL, "Python instance '" + name_ +
                                    "': expected 'exec_done' from the stub, got '" +
                                    m.doc["t"].GetString() + "'");
  }
  return m;
}

void PythonInstance::TimedOut(std::unique_lock<std::mutex>& lock, const std::string& what,
                              int64_t timeout_ms) {
  dead_ = true;
  death_ = "its " + what + " did not return within " + std::to_string(timeout_ms / 1000) +
           " s (execute_timeout_seconds); the stub process (pid " + std::to_string(pid_) +
           ") was killed";
  kill(pid_, SIGKILL);
  const std::string reason =
      "Python model '" + std::string(model_.info().name) + "' instance '" + name_ + "': " + death_;
  lock.unlock();
  model_.SetUnavailable(reason);
  Fail(INFERD_ERROR_UNAVAILABLE, reason);
}

void PythonInstance::MapRegions(const rapidjson::Document& doc, std::vector<int>& fds) {
  size_t used = 0;
  if (doc.HasMember("regions") && doc["regions"].IsArray()) {
    for (const auto& r : doc["regions"].GetArray()) {
      if (used >= fds.size()) break;
      const uint64_t id = r[1].GetUint64();
      auto region = Region::Map(id, fds[used++], r[2].GetUint64());
      std::lock_guard<std::mutex> lock(regions_mu_);
      stub_regions_[id] = std::move(region);
    }
  }
  for (; used < fds.size(); ++used) close(fds[used]);
}

void PythonInstance::Dispatch(Message m) {
  const std::string t = m.doc["t"].GetString();
  if (t == "send") {
    HandleSend(m.doc);
  } else if (t == "bls") {
    HandleBls(m.doc);
  } else if (t == "is_cancelled") {
    HandleIsCancelled(m.doc);
  } else if (t == "log") {
    const int level = m.doc["level"].GetInt();
    const std::string text = name_ + ": " + m.doc["msg"].GetString();
    Host().log(level == 1   ? INFERD_LOG_WARNING
               : level == 2 ? INFERD_LOG_ERROR
                            : INFERD_LOG_INFO,
               text.c_str());
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    reply_ = std::move(m);
    cv_.notify_all();
  }
}

PythonInstance::Message PythonInstance::WaitReply(const char* type, int64_t timeout_ms,
                                                  const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return reply_.has_value() || dead_; };
  if (timeout_ms > 0) {
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
      TimedOut(lock, what, timeout_ms);
    }
  } else {
    cv_.wait(lock, ready);
  }
  if (!reply_.has_value()) {
    Fail(INFERD_ERROR_UNAVAILABLE, "Python model '" + std::string(model_.info().name) +
                                       "' instance '" + name_ + "': " + death_);
  }
  Message m = std::move(*reply_);
  reply_.reset();
  if (std::string(m.doc["t"].GetString()) != type) {
    Fail(INFERD_ERROR_INTERNAL, "Python instance '" + name_ + "': expected '" + type +
                                    "' from the stub, got '" + m.doc["t"].GetString() + "'");
  }
  return m;
}

void PythonInstance::OnStubGone() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  std::unique_lock<std::mutex> lock(mu_);
  gone_ = true;
  const bool unexpected = ready_ && !stopping_ && !dead_;
  if (!dead_ || death_.empty()) {
    death_ = "its stub process (pid " + std::to_string(pid_) + ") " + DescribeExit(status);
  }
  dead_ = true;
  for (auto& [key, p] : pending_) {
    if (p.request == nullptr) {
      FailPending(p, INFERD_ERROR_UNAVAILABLE, "Python model instance '" + name_ + "': " + death_);
    }
  }
  std::erase_if(pending_, [](const auto& kv) { return kv.second.request == nullptr; });
  const std::string reason =
      "Python model '" + std::string(model_.info().name) + "' instance '" + name_ + "': " + death_;
  cv_.notify_all();
  lock.unlock();
  if (unexpected) model_.SetUnavailable(reason);
}

}  // namespace inferd_python
