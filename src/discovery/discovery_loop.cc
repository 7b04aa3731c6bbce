#include "discovery/discovery_loop.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/log.h"

namespace inferd::discovery {

DiscoveryLoop::DiscoveryLoop(DiscoveryLoopOptions options, std::function<HostSet()> hosts,
                             Publish publish, middleman::MetricsRegistry* metrics)
    : options_(std::move(options)),
      hosts_(std::move(hosts)),
      publish_(std::move(publish)),
      metrics_(metrics),
      prober_(options_.prober) {}

DiscoveryLoop::~DiscoveryLoop() { Stop(); }

void DiscoveryLoop::Start() {
  thread_ = std::thread([this] { Run(); });
}

void DiscoveryLoop::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void DiscoveryLoop::Wake() {
  {
    MutexLock lock(mu_);
    wake_ = true;
  }
  cv_.NotifyAll();
}

bool DiscoveryLoop::HasPolled() const {
  MutexLock lock(mu_);
  return rounds_ > 0;
}

void DiscoveryLoop::Run() {
  for (;;) {
    Round();
    MutexLock lock(mu_);
    const auto until = std::chrono::steady_clock::now() + options_.poll_interval;
    while (!stop_ && !wake_) {
      if (!cv_.WaitUntil(lock, until)) break;
    }
    if (stop_) return;
    wake_ = false;
  }
}

void DiscoveryLoop::Round() {
  const auto started = std::chrono::steady_clock::now();
  std::vector<HostStatus> statuses = prober_.ProbeAll(hosts_());

  std::set<std::string, std::less<>> models;
  size_t ready = 0;
  for (const auto& s : statuses) {
    if (!s.ready) continue;
    ++ready;
    models.insert(s.models.begin(), s.models.end());
    models.insert(s.unloading_models.begin(), s.unloading_models.end());
  }
  for (const auto& m : last_models_) {
    if (models.count(m) == 0) lingering_[m] = options_.linger_rounds;
  }
  std::set<std::string, std::less<>> linger;
  for (auto it = lingering_.begin(); it != lingering_.end();) {
    if (models.count(it->first) != 0 || --it->second < 0) {
      it = lingering_.erase(it);
    } else {
      linger.insert(it->first);
      ++it;
    }
  }
  last_models_ = models;

  auto snapshot =
      std::make_shared<const XdsSnapshot>(BuildSnapshot(statuses, linger, options_.snapshot));
  publish_(snapshot);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_->histogram("discovery_poll_duration_seconds", "time to probe every host once")
      .Observe(seconds);
  metrics_->counter("discovery_polls_total", "rounds of probing every host").Add();
  uint64_t failed = 0;
  for (const auto& s : statuses) {
    if (!s.ready && s.reason.rfind("not ready", 0) != 0) ++failed;
  }
  metrics_
      ->counter("discovery_poll_errors_total",
                "host probes that failed (no answer, refused, bad answer)")
      .Add(static_cast<double>(failed));
  auto set = [](middleman::Gauge& gauge, double value) { gauge.Add(value - gauge.value()); };
  const char* hosts_help = "known inferd hosts by state";
  set(metrics_->gauge("discovery_hosts", hosts_help, {{"state", "ready"}}),
      static_cast<double>(ready));
  set(metrics_->gauge("discovery_hosts", hosts_help, {{"state", "not_ready"}}),
      static_cast<double>(statuses.size() - ready));
  set(metrics_->gauge("discovery_models", "models READY on at least one host"),
      static_cast<double>(models.size()));

  MutexLock lock(mu_);
  for (const auto& s : statuses) {
    bool was_ready = false;
    for (const auto& old : last_statuses_) {
      if (old.endpoint == s.endpoint) was_ready = old.ready;
    }
    if (was_ready != s.ready || rounds_ == 0) {
      if (s.ready) {
        INFERD_LOG(Info) << "host " << s.endpoint.id() << " is ready with " << s.models.size()
                         << " model(s)";
      } else {
        INFERD_LOG(Info) << "host " << s.endpoint.id() << " is not ready: " << s.reason;
      }
    }
  }
  last_statuses_ = std::move(statuses);
  last_snapshot_ = std::move(snapshot);
  ++rounds_;
}

std::string DiscoveryLoop::DumpJson() const {
  MutexLock lock(mu_);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("rounds");
  w.Uint64(rounds_);
  w.Key("hosts");
  w.StartArray();
  for (const auto& s : last_statuses_) {
    w.StartObject();
    w.Key("id");
    w.String(s.endpoint.id().c_str());
    w.Key("address");
    w.String(s.address.c_str());
    w.Key("ready");
    w.Bool(s.ready);
    if (!s.reason.empty()) {
      w.Key("reason");
      w.String(s.reason.c_str());
    }
    w.Key("weight");
    w.Uint(s.ready ? s.weight : 0);
    w.Key("queue_us_per_request");
    w.Double(s.queue_us_per_request);
    w.Key("inflight");
    w.Double(s.pending_requests);
    w.Key("models");
    w.StartArray();
    for (const auto& m : s.models) w.String(m.c_str());
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("resources");
  w.StartObject();
  if (last_snapshot_) {
    for (const auto& [type, resources] : last_snapshot_->resources) {
      w.Key(type.c_str());
      w.StartArray();
      for (const auto& [name, unused] : resources) w.String(name.c_str());
      w.EndArray();
    }
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

}  // namespace inferd::discovery
