// infer-perf --search's report: every candidate's levels, the Pareto front
// and the winner with its config.pbtxt fields, as text or --json on stdout
// (perf_search_run.h).
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>

#include "perf_search_run.h"

namespace inferd::perf {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// ", bound 2.5 ms" for the headings; "" without a bound.
std::string BoundText(const std::string& prefix, double bound_us) {
  if (bound_us <= 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ms", bound_us / 1000);
  return prefix + buf;
}

void Num(JsonWriter& w, const char* key, double v) {
  w.Key(key);
  w.Double(std::round(v * 100) / 100);
}

// A point's fields, inside an object the caller opened.
void PointFields(JsonWriter& w, const SearchPoint& p) {
  w.Key("config");
  w.Uint64(p.candidate);
  w.Key("concurrency");
  w.Int(p.concurrency);
  Num(w, "throughput_infer_per_sec", p.throughput);
  Num(w, "latency_us", p.latency_us);
}

void PointJson(JsonWriter& w, const SearchPoint& p) {
  w.StartObject();
  PointFields(w, p);
  w.EndObject();
}

void CandidateJson(JsonWriter& w, size_t id, const SearchCandidate& c, const Options& o) {
  w.StartObject();
  w.Key("id");
  w.Uint64(id);
  w.Key("original");
  w.Bool(c.original);
  w.Key("max_batch_size");
  w.Int(c.settings.max_batch_size);
  w.Key("dynamic_batching");
  w.Bool(c.settings.dynamic_batching);
  w.Key("instance_count");
  w.Int(c.settings.instance_count);
  if (!c.error.empty()) {
    w.Key("error");
    w.String(c.error.c_str());
  }
  w.Key("results");
  w.StartArray();
  for (const auto& r : c.levels) {
    w.StartObject();
    w.Key("concurrency");
    w.Int(r.concurrency);
    Num(w, "throughput_infer_per_sec", r.client.throughput);
    Num(w, "latency_avg_us", r.client.avg_us);
    Num(w, "latency_p50_us", r.client.p50_us);
    Num(w, "latency_p99_us", r.client.p99_us);
    Num(w, "latency_us", o.percentile > 0 ? r.client.pct_us : r.client.p99_us);
    Num(w, "server_avg_batch", r.batch);
    LevelCountsJson(w, r);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void ReportJson(const Options& o, const SearchOutcome& s) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  RunJson(w, o);
  w.Key("latency");
  w.String(s.latency_name.c_str());
  Num(w, "latency_threshold_ms", s.bound_us / 1000);
  w.Key("configs");
  w.StartArray();
  for (size_t i = 0; i < s.candidates.size(); ++i) CandidateJson(w, i, s.candidates[i], o);
  w.EndArray();
  w.Key("front");
  w.StartArray();
  for (size_t i : s.front) PointJson(w, s.points[i]);
  w.EndArray();
  w.Key("winner");
  if (s.winner) {
    const SearchPoint& p = s.points[*s.winner];
    w.StartObject();
    PointFields(w, p);
    if (s.config_search) {
      const std::string text = ConfigText(s.config_json, s.candidates[p.candidate].settings);
      w.Key("config_pbtxt");
      w.String(text.c_str());
    }
    w.EndObject();
  } else {
    w.Null();
  }
  if (s.config_search) {
    w.Key("restored");
    w.Bool(s.restored);
    if (!s.restore_error.empty()) {
      w.Key("restore_error");
      w.String(s.restore_error.c_str());
    }
  }
  w.EndObject();
  std::cout << buf.GetString() << std::endl;
}

void ReportText(const SearchOutcome& s) {
  const std::string lat = s.latency_name + " ms";
  std::printf("*** Search: %zu config%s, latency %s%s ***\n", s.candidates.size(),
              s.candidates.size() == 1 ? "" : "s", s.latency_name.c_str(),
              BoundText(", bound ", s.bound_us).c_str());
  for (size_t i = 0; i < s.candidates.size(); ++i) {
    std::printf("  config #%zu: %s\n", i, CandidateText(s, i).c_str());
    if (!s.candidates[i].error.empty())
      std::printf("    load failed: %s\n", s.candidates[i].error.c_str());
  }
  const std::set<size_t> front(s.front.begin(), s.front.end());
  std::printf("\n  %-7s %11s %12s %10s\n", "config", "concurrency", "infer/s", lat.c_str());
  for (size_t i = 0; i < s.points.size(); ++i) {
    const SearchPoint& p = s.points[i];
    std::string mark = front.count(i) ? "  front" : "";
    if (s.winner && *s.winner == i) mark += " winner";
    if (!p.ok) mark += "  errors";
    std::printf("  #%-6zu %11d %12.1f %10.2f%s\n", p.candidate, p.concurrency, p.throughput,
                p.latency_us / 1000, mark.c_str());
  }
  std::printf("\nPareto front (throughput against %s latency):\n", s.latency_name.c_str());
  for (size_t i : s.front) {
    const SearchPoint& p = s.points[i];
    std::printf("  %.1f infer/s at %s %.2f ms: config #%zu, concurrency %d\n", p.throughput,
                s.latency_name.c_str(), p.latency_us / 1000, p.candidate, p.concurrency);
  }
  if (!s.winner) {
    std::printf("\nNo level is within %s <= %.2f ms.\n", s.latency_name.c_str(), s.bound_us / 1000);
  } else {
    const SearchPoint& p = s.points[*s.winner];
    std::printf("\nWinner%s: config #%zu (%s) at concurrency %d: %.1f infer/s, %s %.2f ms\n",
                BoundText(" within " + s.latency_name + " <= ", s.bound_us).c_str(), p.candidate,
                CandidateText(s, p.candidate).c_str(), p.concurrency, p.throughput,
                s.latency_name.c_str(), p.latency_us / 1000);
    if (s.config_search) {
      std::printf("config.pbtxt fields:\n%s",
                  ConfigText(s.config_json, s.candidates[p.candidate].settings).c_str());
    }
  }
  if (s.config_search) {
    std::printf("%s\n", s.restored ? "The model's repository config serves again."
                                   : "The model's repository config could NOT be loaded again.");
  }
}

}  // namespace

std::string CandidateText(const SearchOutcome& s, size_t i) {
  if (s.config_json.empty()) return "the model as it serves";
  const SearchCandidate& c = s.candidates[i];
  return Describe(c.settings) + (c.original ? " (the model's)" : "");
}

void ReportSearch(const Options& o, const SearchOutcome& s) {
  if (o.json)
    ReportJson(o, s);
  else
    ReportText(s);
}

}  // namespace inferd::perf
