#include "status/status_service.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <map>
#include <optional>

namespace inferd::status {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

// Taken during static initialisation, before main: the process's start.
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

const char* ControlModeName(ModelControlMode mode) {
  switch (mode) {
    case ModelControlMode::kPoll:
      return "poll";
    case ModelControlMode::kExplicit:
      return "explicit";
    case ModelControlMode::kNone:
      break;
  }
  return "none";
}

void String(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void Number(Writer& w, const char* key, const std::optional<double>& v) {
  w.Key(key);
  if (v) {
    w.Double(*v);
  } else {
    w.Null();
  }
}

void WriteFigures(Writer& w, const WindowFigures& f) {
  w.StartObject();
  w.Key("seconds");
  w.Double(f.seconds);
  w.Key("inferences_per_s");
  w.Double(f.inferences_per_s);
  w.Key("requests_per_s");
  w.Double(f.requests_per_s);
  w.Key("failures_per_s");
  w.Double(f.failures_per_s);
  w.Key("executions_per_s");
  w.Double(f.executions_per_s);
  Number(w, "p50_s", f.p50_s);
  Number(w, "p99_s", f.p99_s);
  Number(w, "queue_p50_s", f.queue_p50_s);
  Number(w, "queue_p99_s", f.queue_p99_s);
  Number(w, "compute_p50_s", f.compute_p50_s);
  Number(w, "compute_p99_s", f.compute_p99_s);
  Number(w, "queue_us_per_request", f.queue_us_per_request);
  Number(w, "batch_size_mean", f.batch_size_mean);
  w.EndObject();
}

void WriteChart(Writer& w, const std::vector<ChartPoint>& chart) {
  w.StartArray();
  for (const ChartPoint& p : chart) {
    w.StartObject();
    w.Key("age_s");
    w.Double(p.age_s);
    w.Key("inferences_per_s");
    w.Double(p.inferences_per_s);
    Number(w, "p50_s", p.p50_s);
    Number(w, "p99_s", p.p99_s);
    w.EndObject();
  }
  w.EndArray();
}

// One row: a version of the index (state, reason) and, when statistics
// are served and the version serves, its numbers.
struct Row {
  std::string name;
  std::optional<int64_t> version;
  std::optional<std::string_view> state;  // none when the repository part is withheld
  std::string reason;
  const ModelStatistics* stats = nullptr;
  const SeriesFigures* figures = nullptr;
};

void WriteRow(Writer& w, const Row& r, bool with_stats) {
  w.StartObject();
  w.Key("name");
  String(w, r.name);
  w.Key("version");
  if (r.version) {
    String(w, std::to_string(*r.version));
  } else {
    w.Null();
  }
  if (r.state) {
    w.Key("state");
    String(w, *r.state);
    w.Key("reason");
    String(w, r.reason);
  }
  if (with_stats && r.stats != nullptr) {
    const ModelStatsSnapshot& s = r.stats->stats;
    w.Key("instances");
    w.Int(r.stats->instance_count);
    if (r.stats->layout) {
      w.Key("active_instances");
      w.Int(r.stats->layout->active);
    }
    w.Key("queue");
    w.Int64(std::max<int64_t>(0, s.pending));
    w.Key("inflight");
    w.Int64(std::max<int64_t>(0, s.inflight));
    w.Key("inferences_total");
    w.Uint64(s.inference_count);
    w.Key("requests_total");
    w.Uint64(s.success.count);
    w.Key("window");
    if (r.figures != nullptr && r.figures->window) {
      WriteFigures(w, *r.figures->window);
    } else {
      w.Null();
    }
    w.Key("chart");
    WriteChart(w, r.figures != nullptr ? r.figures->chart : std::vector<ChartPoint>{});
  }
  w.EndObject();
}

void WriteSharedMemory(Writer& w, InferenceServer& server) {
  w.StartObject();
  w.Key("system");
  w.StartArray();
  if (auto regions = server.control().SystemShmStatus(""); regions.ok()) {
    for (const RegionStatus& r : *regions) {
      w.StartObject();
      w.Key("name");
      String(w, r.name);
      w.Key("key");
      String(w, r.key);
      w.Key("offset");
      w.Uint64(r.offset);
      w.Key("byte_size");
      w.Uint64(r.byte_size);
      w.EndObject();
    }
  }
  w.EndArray();
  w.Key("cuda");
  w.StartArray();
  if (auto regions = server.control().CudaShmStatus(""); regions.ok()) {
    for (const CudaRegionStatus& r : *regions) {
      w.StartObject();
      w.Key("name");
      String(w, r.name);
      w.Key("device_id");
      w.Int64(r.device_id);
      w.Key("byte_size");
      w.Uint64(r.byte_size);
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
}

void WriteServer(Writer& w, const InferenceServer& server,
                 const std::vector<std::string>& extensions) {
  w.Key("server");
  w.StartObject();
  w.Key("id");
  String(w, server.id());
  w.Key("version");
  String(w, InferenceServer::Version());
  w.Key("uptime_s");
  w.Double(ProcessUptimeSeconds());
  w.Key("extensions");
  w.StartArray();
  for (const std::string& e : extensions) String(w, e);
  w.EndArray();
  w.EndObject();
}

// The parts withheld, by API group name, with their refusals.
void WriteRestricted(Writer& w, const StatusAccess& access) {
  w.Key("restricted");
  w.StartObject();
  for (const auto& [part, refusal] :
       {std::pair<const char*, const std::string*>{"metadata", &access.metadata},
        {"model-repository", &access.repository},
        {"statistics", &access.statistics},
        {"shared-memory", &access.shared_memory}}) {
    if (refusal->empty()) continue;
    w.Key(part);
    String(w, *refusal);
  }
  w.EndObject();
}

}  // namespace

double ProcessUptimeSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kProcessStart).count();
}

StatusService::StatusService(InferenceServer& server, StatusServiceOptions options)
    : server_(server),
      options_(options),
      window_(std::chrono::duration<double>(options.window).count(),
              std::chrono::duration<double>(options.chart_step).count()) {
  sampler_ = std::thread([this] { Run(); });
}

StatusService::~StatusService() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    wake_.NotifyAll();
  }
  sampler_.join();
}

void StatusService::Sample(double t_s) {
  std::map<SeriesKey, VersionCounters> versions;
  if (auto all = server_.GetStatistics("", -1); all.ok()) {
    for (const ModelStatistics& v : *all) {
      versions.emplace(SeriesKey{v.name, v.version}, VersionCounters::From(v.stats));
    }
  }
  MutexLock lock(mu_);
  window_.Add(t_s, std::move(versions));
}

void StatusService::Run() {
  // Ticks on a fixed schedule from the start; a tick missed (a slow
  // snapshot, a suspended process) is skipped, not made up.
  const auto start = std::chrono::steady_clock::now();
  int64_t tick = 0;
  const double interval_s = std::chrono::duration<double>(options_.sample_interval).count();
  while (true) {
    Sample(static_cast<double>(tick) * interval_s);
    const auto now = std::chrono::steady_clock::now();
    const int64_t elapsed = (now - start) / options_.sample_interval;
    tick = std::max(tick + 1, elapsed + 1);
    MutexLock lock(mu_);
    const auto next = start + tick * options_.sample_interval;
    while (!stop_ && std::chrono::steady_clock::now() < next) wake_.WaitUntil(lock, next);
    if (stop_) return;
  }
}

std::vector<ModelIndexEntry> StatusService::Index() {
  MutexLock lock(index_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!index_valid_ || now - index_time_ >= options_.index_ttl) {
    index_ = server_.RepositoryIndex(/*ready_only=*/false);  // paths redacted for clients
    index_time_ = now;
    index_valid_ = true;
  }
  return index_;
}

std::string StatusService::Json(const StatusAccess& access,
                                const std::vector<std::string>& extensions) {
  const bool with_stats = access.statistics.empty();
  const bool with_index = access.repository.empty();
  std::vector<ModelStatistics> stats;
  std::map<SeriesKey, SeriesFigures> figures;
  if (with_stats) {
    if (auto all = server_.GetStatistics("", -1); all.ok()) stats = std::move(*all);
    MutexLock lock(mu_);
    figures = window_.Compute();
  }
  std::map<SeriesKey, const ModelStatistics*> by_key;
  for (const ModelStatistics& s : stats) by_key[{s.name, s.version}] = &s;

  // Rows: the index's entries (every version, whatever its state) when the
  // repository part is served; otherwise the serving versions alone.
  std::vector<Row> rows;
  if (with_index) {
    for (ModelIndexEntry& e : Index()) {
      Row r{e.name, e.version, ModelStateName(e.state), std::move(e.reason)};
      if (e.version) {
        if (auto it = by_key.find({e.name, *e.version}); it != by_key.end()) r.stats = it->second;
      }
      rows.push_back(std::move(r));
    }
  } else {
    for (const ModelStatistics& s : stats) rows.push_back(Row{s.name, s.version, {}, "", &s});
  }
  for (Row& r : rows) {
    if (!r.version) continue;
    if (auto it = figures.find({r.name, *r.version}); it != figures.end()) r.figures = &it->second;
  }

  rapidjson::StringBuffer buf;
  Writer w(buf);
  w.StartObject();
  if (access.metadata.empty()) WriteServer(w, server_, extensions);
  WriteRestricted(w, access);
  if (with_index) {
    w.Key("model_control_mode");
    String(w, ControlModeName(server_.control_mode()));
  }
  w.Key("window_s");
  w.Double(std::chrono::duration<double>(options_.window).count());
  w.Key("sample_interval_s");
  w.Double(std::chrono::duration<double>(options_.sample_interval).count());
  w.Key("chart_step_s");
  w.Double(std::chrono::duration<double>(options_.chart_step).count());
  if (with_index || with_stats) {
    w.Key("models");
    w.StartArray();
    for (const Row& r : rows) WriteRow(w, r, with_stats);
    w.EndArray();
  }
  if (access.shared_memory.empty()) {
    w.Key("shared_memory");
    WriteSharedMemory(w, server_);
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace inferd::status
