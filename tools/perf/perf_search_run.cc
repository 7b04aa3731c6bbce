// infer-perf --search: the candidates' loads, the concurrency sweeps and the
// restore of the repository config (perf_search_run.h).
#include "perf_search_run.h"

#include <pthread.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

namespace inferd::perf {
namespace {

// Ctrl-C during a config search: the level being measured completes, then
// the model's repository config is loaded again and what was measured is
// reported; a second Ctrl-C quits at once. The signal is blocked in the
// search's thread and so in the load threads it starts (an interrupted
// socket call would fail a request or the load call whose outcome the
// restore depends on); one watcher thread that only sleeps takes it.
std::atomic<bool> interrupted{false};

extern "C" void OnInterrupt(int) {
  if (interrupted.exchange(true)) _exit(130);
}

class InterruptWatch {
 public:
  InterruptWatch() {
    struct sigaction sa = {};
    sa.sa_handler = OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, &old_mask_);
    watcher_ = std::thread([this, sigint] {
      pthread_sigmask(SIG_UNBLOCK, &sigint, nullptr);
      while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
  }
  ~InterruptWatch() {
    stop_ = true;
    watcher_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);  // the handler stays: Ctrl-C quits
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

 private:
  sigset_t old_mask_;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

// The latency compared with -l: --percentile's, else p99 (Model Analyzer's).
double SearchLatencyUs(const Options& o, const LevelResult& r) {
  return o.percentile > 0 ? r.client.pct_us : r.client.p99_us;
}

ConcurrencyPlan PlanFor(const Options& o) {
  ConcurrencyPlan p;
  p.doubling = !o.concurrency_set;
  p.start = o.concurrency_set ? o.c_start : 1;
  p.end = o.c_end;
  p.step = o.c_step;
  p.max = o.search_max_concurrency;
  return p;
}

// The server's message in an error answer ({"error": "..."}), else the body.
std::string ErrorText(const client::HttpResponse& r) {
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  if (!d.HasParseError() && d.IsObject() && d.HasMember("error") && d["error"].IsString())
    return d["error"].GetString();
  return "HTTP " + std::to_string(r.status) + ": " + r.body;
}

// Loads the model with `config_json` as the load API's config override;
// "" when it serves, else why not. `answered`: the server answered (a
// refused load leaves what served serving; without an answer, a timeout or
// a lost connection, the load may still have happened).
std::string LoadWithConfig(client::HttpClient& http, const std::string& model,
                           const std::string& config_json, bool& answered) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("parameters");
  w.StartObject();
  w.Key("config");
  w.String(config_json.c_str(), rapidjson::SizeType(config_json.size()));
  w.EndObject();
  w.EndObject();
  client::HttpResponse r;
  const client::ClientStatus st =
      http.Post("/v2/repository/models/" + model + "/load", buf.GetString(),
                {{"Content-Type", "application/json"}}, r);
  answered = st.ok;
  if (!st.ok) return st.message;
  return r.status == 200 ? "" : ErrorText(r);
}

bool ReadConfig(client::HttpClient& http, const std::string& model, std::string& json,
                std::string& error) {
  client::HttpResponse r;
  const client::ClientStatus st = http.Get("/v2/models/" + model + "/config", r);
  if (!st.ok || r.status != 200) {
    error = st.ok ? ErrorText(r) : st.message;
    return false;
  }
  json = r.body;
  return true;
}

// The repository config serving again. A plain load keeps a model loaded
// with an override (its repository files did not change), so the model is
// unloaded first; the settings read back must be the original's.
void Restore(const Options& o, client::HttpClient& http, SearchOutcome& s) {
  client::ClientStatus st = http.UnloadModel(o.model);
  if (st.ok) st = http.LoadModel(o.model);
  std::string json, error;
  SearchSettings now;
  if (!st.ok) {
    s.restore_error = st.message;
  } else if (!ReadConfig(http, o.model, json, error) || !SettingsFromConfig(json, now, error)) {
    s.restore_error = error;
  } else if (!(now == s.candidates[0].settings)) {
    s.restore_error = "the model serves " + Describe(now) + " after loading it again";
  }
  s.restored = s.restore_error.empty();
}

// One candidate's concurrency sweep; its points are appended to s.points.
void Sweep(const Options& o, const MeasureFn& measure, size_t index, SearchOutcome& s) {
  const ConcurrencyPlan plan = PlanFor(o);
  SearchCandidate& cand = s.candidates[index];
  std::vector<SearchPoint> mine;
  for (int c = plan.start; c > 0 && !interrupted; c = plan.Next(c)) {
    cand.levels.push_back(measure(c));
    const LevelResult& r = cand.levels.back();
    SearchPoint p{index, c, r.client.throughput, SearchLatencyUs(o, r),
                  r.client.requests > 0 && r.client.errors == 0};
    mine.push_back(p);
    s.points.push_back(p);
    std::fprintf(stderr, "  config #%zu, concurrency %d: %.1f infer/s, %s %.2f ms%s\n", index, c,
                 p.throughput, s.latency_name.c_str(), p.latency_us / 1000,
                 p.ok ? "" : " (errors)");
    if (!SweepGoesOn(mine, s.bound_us, plan.StopsOnPlateau())) break;
  }
}

}  // namespace

int RunSearch(const Options& o, client::HttpClient* http, const MeasureFn& measure) {
  SearchOutcome s;
  s.latency_name = o.percentile > 0 ? "p" + std::to_string(int(o.percentile)) : "p99";
  s.bound_us = o.latency_threshold_ms * 1000;
  s.config_search = o.ConfigSearch();
  std::string error;
  SearchSettings original;
  if (http == nullptr || !ReadConfig(*http, o.model, s.config_json, error) ||
      !SettingsFromConfig(s.config_json, original, error)) {
    if (http == nullptr) error = "no HTTP endpoint to read it from";
    std::cerr << "infer-perf: " << (s.config_search ? "" : "note: ")
              << "--search: cannot read the configuration of model '" << o.model << "': " << error
              << "\n";
    // A concurrency sweep alone does not need it: the model as it serves.
    if (s.config_search) return 1;
    s.config_json.clear();
  }
  const std::vector<SearchSettings> settings =
      s.config_search ? SearchCandidates(original, o.search_max_batch_sizes,
                                         o.search_dynamic_batching, o.search_instance_counts)
                      : std::vector<SearchSettings>{original};
  bool loaded_any = false;  // the model may serve a candidate: restore at the end
  std::unique_ptr<InterruptWatch> watch;
  if (s.config_search) watch = std::make_unique<InterruptWatch>();
  for (size_t i = 0; i < settings.size() && !interrupted; ++i) {
    s.candidates.push_back({settings[i], i == 0, "", {}});
    std::fprintf(stderr, "config #%zu: %s\n", i, CandidateText(s, i).c_str());
    if (i > 0) {
      bool answered = false;
      s.candidates[i].error =
          LoadWithConfig(*http, o.model, OverrideConfig(s.config_json, settings[i]), answered);
      if (s.candidates[i].error.empty() || !answered) loaded_any = true;
      if (!s.candidates[i].error.empty()) {
        std::fprintf(stderr, "  load failed: %s\n", s.candidates[i].error.c_str());
        continue;
      }
    }
    Sweep(o, measure, i, s);
  }
  if (interrupted) {
    std::fprintf(stderr, "infer-perf: interrupted%s\n",
                 loaded_any ? ": loading the model's repository config again" : "");
  }
  if (loaded_any)
    Restore(o, *http, s);
  else
    s.restored = true;  // a failed load keeps the versions serving: nothing changed
  s.front = ParetoFront(s.points);
  s.winner = PickWinner(s.points, s.bound_us);
  ReportSearch(o, s);
  if (!s.restore_error.empty()) {
    std::cerr << "infer-perf: --search: could not load the repository config of '" << o.model
              << "' again: " << s.restore_error << "\n";
    return 1;
  }
  if (interrupted) return 130;  // the shell's status for SIGINT
  for (const auto& p : s.points) {
    if (p.ok) return 0;
  }
  return 1;
}

}  // namespace inferd::perf
