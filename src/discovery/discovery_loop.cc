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

namespace {

// Probes that failed (no answer, refused, bad answer), as opposed to hosts
// that answered "not ready".
size_t FailedProbes(const std::vector<HostStatus>& statuses) {
  size_t failed = 0;
  for (const auto& s : statuses) {
    if (!s.ready && s.reason.rfind("not ready", 0) != 0) ++failed;
  }
  return failed;
}

void SetGauge(middleman::Gauge& gauge, double value) { gauge.Add(value - gauge.value()); }

}  // namespace

void DiscoveryLoop::Round() {
  const auto started = std::chrono::steady_clock::now();
  std::vector<HostStatus> statuses = prober_.ProbeAll(hosts_());
  const size_t failed = FailedProbes(statuses);

  // Fail static: when no host answers at all (this process cut off from
  // them, say) clients keep the last assignment rather than an empty one,
  // as they would if the control plane were gone. Hosts that answer "not
  // ready", and hosts removed from the sources, still leave.
  const bool cut_off = !statuses.empty() && failed == statuses.size() && published_ready_;
  if (cut_off != fail_static_) {
    if (cut_off) {
      INFERD_LOG(Warning) << "every probe of " << statuses.size()
                          << " host(s) failed; keeping the last assignment";
    } else {
      INFERD_LOG(Info) << "hosts answer again; publishing";
    }
    fail_static_ = cut_off;
  }

  std::set<std::string, std::less<>> models;
  size_t ready = 0;
  for (const auto& s : statuses) {
    if (!s.ready) continue;
    ++ready;
    models.insert(s.models.begin(), s.models.end());
    models.insert(s.unloading_models.begin(), s.unloading_models.end());
  }
  std::shared_ptr<const XdsSnapshot> snapshot;
  if (!cut_off) {
    snapshot = BuildAndPublish(statuses, models);
    published_ready_ = ready > 0;
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_->histogram("discovery_poll_duration_seconds", "time to probe every host once")
      .Observe(seconds);
  metrics_->counter("discovery_polls_total", "rounds of probing every host").Add();
  metrics_
      ->counter("discovery_poll_errors_total",
                "host probes that failed (no answer, refused, bad answer)")
      .Add(static_cast<double>(failed));
  const char* hosts_help = "known inferd hosts by state";
  SetGauge(metrics_->gauge("discovery_hosts", hosts_help, {{"state", "ready"}}),
           static_cast<double>(ready));
  SetGauge(metrics_->gauge("discovery_hosts", hosts_help, {{"state", "not_ready"}}),
           static_cast<double>(statuses.size() - ready));
  SetGauge(metrics_->gauge("discovery_models", "models READY on at least one host"),
           static_cast<double>(models.size()));
  SetGauge(metrics_->gauge("discovery_fail_static",
                           "1 while every probe fails and the last assignment is kept"),
           cut_off ? 1.0 : 0.0);
  Remember(std::move(statuses), std::move(snapshot));
}

std::shared_ptr<const XdsSnapshot> DiscoveryLoop::BuildAndPublish(
    const std::vector<HostStatus>& statuses, const std::set<std::string, std::less<>>& models) {
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
  return snapshot;
}

void DiscoveryLoop::Remember(std::vector<HostStatus> statuses,
                             std::shared_ptr<const XdsSnapshot> snapshot) {
  MutexLock lock(mu_);
  std::map<HostEndpoint, bool> was_ready;
  for (const auto& old : last_statuses_) was_ready[old.endpoint] = old.ready;
  for (const auto& s : statuses) {
    auto it = was_ready.find(s.endpoint);
    if (rounds_ != 0 && it != was_ready.end() && it->second == s.ready) continue;
    if (s.ready) {
      INFERD_LOG(Info) << "host " << s.endpoint.id() << " is ready with " << s.models.size()
                       << " model(s)";
    } else {
      INFERD_LOG(Info) << "host " << s.endpoint.id() << " is not ready: " << s.reason;
    }
  }
  last_statuses_ = std::move(statuses);
  if (snapshot) last_snapshot_ = std::move(snapshot);
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
