// infer-perf: a load generator and measurement tool for KServe v2 servers,
// with perf_analyzer's common flags. Measures throughput and client latency
// percentiles in repeated windows until stable (after a warm-up), and the
// server-side breakdown from the statistics extension.
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "inferd/client/client.h"
#include "inferd/client/http_client.h"
#include "latency_stats.h"
#include "perf_options.h"
#include "perf_report.h"
#include "perf_shm.h"
#include "perf_transport.h"

namespace inferd::perf {
namespace {

using Clock = std::chrono::steady_clock;

// ---- inputs -------------------------------------------------------------------

template <typename T>
void AppendValue(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void AppendNumber(std::string& out, const std::string& dt, double v) {
  if (dt == "BOOL")
    AppendValue<uint8_t>(out, v != 0);
  else if (dt == "UINT8")
    AppendValue<uint8_t>(out, uint8_t(v));
  else if (dt == "INT8")
    AppendValue<int8_t>(out, int8_t(v));
  else if (dt == "UINT16")
    AppendValue<uint16_t>(out, uint16_t(v));
  else if (dt == "INT16")
    AppendValue<int16_t>(out, int16_t(v));
  else if (dt == "UINT32")
    AppendValue<uint32_t>(out, uint32_t(v));
  else if (dt == "INT32")
    AppendValue<int32_t>(out, int32_t(v));
  else if (dt == "UINT64")
    AppendValue<uint64_t>(out, uint64_t(v));
  else if (dt == "INT64")
    AppendValue<int64_t>(out, int64_t(v));
  else if (dt == "FP32")
    AppendValue<float>(out, float(v));
  else if (dt == "FP64")
    AppendValue<double>(out, v);
  else
    AppendValue<uint16_t>(out, 0);  // FP16/BF16: zero bits
}

std::vector<client::Tensor> BuildInputs(const Options& o, const std::string& metadata) {
  rapidjson::Document md;
  md.Parse(metadata.c_str());
  if (md.HasParseError() || !md.IsObject() || !md.HasMember("inputs")) {
    throw std::runtime_error("cannot read model metadata: " + metadata);
  }
  rapidjson::Document file;
  if (o.input_data != "random" && o.input_data != "zero") {
    std::ifstream f(o.input_data);
    std::stringstream ss;
    ss << f.rdbuf();
    file.Parse(ss.str().c_str());
    if (!f || file.HasParseError() || !file.HasMember("data") || !file["data"].IsArray() ||
        file["data"].Empty()) {
      throw std::runtime_error("--input-data " + o.input_data +
                               ": expected JSON {\"data\": [{\"INPUT\": [...]}]}");
    }
  }
  std::mt19937 rng(42);
  std::vector<client::Tensor> inputs;
  for (const auto& in : md["inputs"].GetArray()) {
    client::Tensor t;
    t.name = in["name"].GetString();
    t.datatype = in["datatype"].GetString();
    std::vector<int64_t> dims;
    for (const auto& d : in["shape"].GetArray()) dims.push_back(d.GetInt64());
    const bool batched =
        !dims.empty() && dims[0] == -1 && md["inputs"].Size() > 0 && o.shapes.count(t.name) == 0;
    if (auto it = o.shapes.find(t.name); it != o.shapes.end()) {
      dims = it->second;
      if (batched) dims.insert(dims.begin(), o.batch);
    } else if (batched) {
      dims[0] = o.batch;
    }
    for (auto& d : dims) {
      if (d < 0) d = 1;
    }
    t.shape = dims;
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    if (file.IsObject() && file["data"][0].HasMember(t.name.c_str())) {
      const auto& values = file["data"][0][t.name.c_str()];
      const auto& arr =
          values.IsObject() && values.HasMember("content") ? values["content"] : values;
      for (int64_t rep = 0; rep < o.batch; ++rep) {
        for (const auto& v : arr.GetArray()) {
          if (t.datatype == "BYTES") {
            const uint32_t n = v.GetStringLength();
            AppendValue<uint32_t>(t.data, n);
            t.data.append(v.GetString(), n);
          } else {
            AppendNumber(t.data, t.datatype, v.IsBool() ? v.GetBool() : v.GetDouble());
          }
        }
      }
    } else if (t.datatype == "BYTES") {
      for (int64_t i = 0; i < count; ++i) {
        const std::string s = o.input_data == "zero" ? "0" : std::to_string(rng() % 100);
        AppendValue<uint32_t>(t.data, static_cast<uint32_t>(s.size()));
        t.data += s;
      }
    } else {
      for (int64_t i = 0; i < count; ++i) {
        AppendNumber(t.data, t.datatype, o.input_data == "zero" ? 0 : double(rng() % 16));
      }
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// Outputs for --shared-memory system, and the bytes each gets: the given
// size, else the largest output of one probe request sent the usual way.
bool OutputSlots(const Options& o, client::Client& control, const client::InferRequest& request,
                 std::vector<std::string>& names, size_t& bytes, std::string& error) {
  client::InferResult probe;
  client::ClientStatus st = control.Infer(request, probe);
  if (!st.ok || !probe.ok()) {
    error = "the probe request (to size the outputs) failed: " + (st.ok ? probe.error : st.message);
    return false;
  }
  bytes = o.output_shm_size;
  for (const auto& t : probe.outputs) {
    names.push_back(t.name);
    if (o.output_shm_size == 0) bytes = std::max(bytes, t.data.size());
  }
  if (!names.empty() && bytes == 0) bytes = 1;  // empty outputs still need a slot
  return true;
}

// ---- server statistics --------------------------------------------------------

struct ServerStats {
  uint64_t success = 0, queue_ns = 0, input_ns = 0, infer_ns = 0, output_ns = 0;
  uint64_t inferences = 0, executions = 0;
};

// The model's inputs as the HTTP metadata JSON that BuildInputs reads.
std::string MetadataJson(const client::ModelMetadata& md) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("inputs");
  w.StartArray();
  for (const auto& t : md.inputs) {
    w.StartObject();
    w.Key("name");
    w.String(t.name.c_str());
    w.Key("datatype");
    w.String(t.datatype.c_str());
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape) w.Int64(d);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

ServerStats FetchStats(client::HttpClient& http, const Options& o) {
  ServerStats s;
  client::HttpResponse r;
  std::string path = "/v2/models/" + o.model;
  if (!o.version.empty()) path += "/versions/" + o.version;
  if (!http.Get(path + "/stats", r).ok || r.status != 200) return s;
  rapidjson::Document d;
  d.Parse(r.body.c_str());
  if (d.HasParseError() || !d.HasMember("model_stats")) return s;
  for (const auto& m : d["model_stats"].GetArray()) {
    const auto& is = m["inference_stats"];
    s.success += is["success"]["count"].GetUint64();
    s.queue_ns += is["queue"]["ns"].GetUint64();
    s.input_ns += is["compute_input"]["ns"].GetUint64();
    s.infer_ns += is["compute_infer"]["ns"].GetUint64();
    s.output_ns += is["compute_output"]["ns"].GetUint64();
    s.inferences += m["inference_count"].GetUint64();
    s.executions += m["execution_count"].GetUint64();
  }
  return s;
}

// ---- load ---------------------------------------------------------------------

struct Record {
  Clock::time_point end;
  uint64_t latency_us;
  bool ok;
};

class Recorder {
 public:
  void Add(const Record& r) {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(r);
  }
  std::vector<Record> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Record> out;
    out.swap(records_);
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<Record> records_;
};

class Load {
 public:
  Load(const Options& o, TransportFactory factory, int concurrency, double rate)
      : o_(o), factory_(std::move(factory)), concurrency_(concurrency), rate_(rate) {}

  void Start() {
    start_ = Clock::now();
    const int workers = rate_ > 0 ? o_.max_threads : concurrency_;
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Worker(); });
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  Recorder& recorder() { return recorder_; }
  std::string first_error() {
    std::lock_guard<std::mutex> lock(err_mu_);
    return first_error_;
  }

 private:
  // Scheduled send time of the i-th request in rate mode.
  Clock::time_point Slot(uint64_t i) {
    std::lock_guard<std::mutex> lock(sched_mu_);
    while (schedule_.size() <= i) {
      const double gap = o_.poisson ? exp_(rng_) : 1.0 / rate_;
      next_s_ += gap;
      schedule_.push_back(start_ + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(next_s_)));
    }
    return schedule_[i];
  }

  void Worker() {
    std::unique_ptr<Transport> t;
    std::string error;
    t = factory_(error);
    if (!t) {
      Fail(error);
      return;
    }
    while (!stop_) {
      Clock::time_point begin = Clock::now();
      if (rate_ > 0) {
        begin = Slot(next_.fetch_add(1));
        while (!stop_ && Clock::now() < begin) {
          std::this_thread::sleep_until(
              std::min(begin, Clock::now() + std::chrono::milliseconds(50)));
        }
        if (stop_) break;
      }
      const bool ok = t->Infer(error);
      const auto end = Clock::now();
      if (!ok) Fail(error);
      recorder_.Add(
          Record{end,
                 static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count()),
                 ok});
    }
  }

  void Fail(const std::string& e) {
    std::lock_guard<std::mutex> lock(err_mu_);
    if (first_error_.empty()) first_error_ = e;
  }

  const Options& o_;
  TransportFactory factory_;
  int concurrency_;
  double rate_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> next_{0};
  Clock::time_point start_;
  std::vector<std::thread> threads_;
  Recorder recorder_;
  std::mutex sched_mu_;
  std::vector<Clock::time_point> schedule_;
  double next_s_ = 0;
  std::mt19937_64 rng_{7};
  std::exponential_distribution<double> exp_{rate_ > 0 ? rate_ : 1.0};
  std::mutex err_mu_;
  std::string first_error_;
};

LevelResult MeasureLevel(const Options& o, const TransportFactory& factory, int concurrency,
                         double rate, client::HttpClient& stats_http) {
  LevelResult res;
  res.concurrency = concurrency;
  res.rate = rate;
  Load load(o, factory, concurrency, rate);
  load.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(o.warmup_ms));
  load.recorder().Take();
  std::vector<WindowSummary> windows;
  ServerStats before = FetchStats(stats_http, o), after;
  const bool tty = isatty(STDERR_FILENO);
  for (int trial = 0; trial < o.max_trials; ++trial) {
    const auto w0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(o.interval_ms));
    auto records = load.recorder().Take();
    const double secs = std::chrono::duration<double>(Clock::now() - w0).count();
    std::vector<uint64_t> lat;
    uint64_t errors = 0;
    for (const auto& r : records) {
      if (r.ok)
        lat.push_back(r.latency_us);
      else
        ++errors;
    }
    windows.push_back(Summarize(lat, errors, secs, o.batch, o.percentile));
    if (tty) {
      const auto& w = windows.back();
      std::fprintf(stderr, "\r  window %d: %.1f infer/s, avg %.0f us, p99 %.0f us%s   ", trial + 1,
                   w.throughput, w.avg_us, w.p99_us, errors ? " (errors)" : "");
    }
    if (IsStable(windows, 3, o.stability, o.percentile > 0)) {
      res.stable = true;
      break;
    }
  }
  after = FetchStats(stats_http, o);
  load.Stop();
  if (tty) std::fprintf(stderr, "\r%80s\r", "");
  // The result: the last three windows merged (or all if fewer).
  const size_t n = std::min<size_t>(3, windows.size());
  WindowSummary sum;
  for (size_t i = windows.size() - n; i < windows.size(); ++i) {
    const auto& w = windows[i];
    sum.requests += w.requests;
    sum.errors += w.errors;
    sum.seconds += w.seconds;
    sum.avg_us += w.avg_us / n;
    sum.p50_us += w.p50_us / n;
    sum.p90_us += w.p90_us / n;
    sum.p95_us += w.p95_us / n;
    sum.p99_us += w.p99_us / n;
    sum.pct_us += w.pct_us / n;
  }
  sum.throughput = sum.seconds > 0 ? double(sum.requests) * o.batch / sum.seconds : 0;
  res.client = sum;
  const uint64_t done = after.success - before.success;
  if (done > 0) {
    res.queue_us = double(after.queue_ns - before.queue_ns) / done / 1000;
    res.input_us = double(after.input_ns - before.input_ns) / done / 1000;
    res.infer_us = double(after.infer_ns - before.infer_ns) / done / 1000;
    res.output_us = double(after.output_ns - before.output_ns) / done / 1000;
  }
  if (after.executions > before.executions) {
    res.batch =
        double(after.inferences - before.inferences) / (after.executions - before.executions);
  }
  res.first_error = load.first_error();
  return res;
}

}  // namespace
}  // namespace inferd::perf

int main(int argc, char** argv) {
  using namespace inferd::perf;
  const Options o = ParseOptions(argc, argv);
  const inferd::client::ClientOptions& conn = o.connection.For(o.protocol);
  // Metadata comes over the protocol under test; the server-side statistics
  // over HTTP (for gRPC: the gRPC URL's host with port 8000, or
  // INFER_PERF_HTTP_URL), and are left out of the report when unreachable.
  std::string http_url = o.url;
  if (o.protocol == "grpc") {
    http_url = o.url.substr(0, o.url.rfind(':')) + ":8000";
    if (const char* e = std::getenv("INFER_PERF_HTTP_URL")) http_url = e;
  }
  inferd::client::HttpClient http(http_url, o.connection.http);
  std::string metadata_json;
  {
    std::string error;
    auto client = inferd::client::MakeClient(o.protocol, o.url, conn, error);
    inferd::client::ModelMetadata md;
    inferd::client::ClientStatus st;
    if (client) st = client->GetModelMetadata(o.model, o.version, md);
    if (!client || !st.ok) {
      std::cerr << "infer-perf: cannot get metadata of model '" << o.model << "' from " << o.url
                << ": " << (client ? st.message : error) << "\n";
      return 1;
    }
    metadata_json = MetadataJson(md);
  }
  std::vector<inferd::client::Tensor> inputs;
  try {
    inputs = BuildInputs(o, metadata_json);
  } catch (const std::exception& e) {
    std::cerr << "infer-perf: " << e.what() << "\n";
    return 1;
  }
  inferd::client::InferRequest request;
  request.model = o.model;
  request.version = o.version;
  request.inputs = std::move(inputs);
  std::unique_ptr<inferd::client::Client> control;
  std::unique_ptr<SystemShmRegion> shm;
  if (o.shared_memory == "system") {
    std::string error;
    control = inferd::client::MakeClient(o.protocol, o.url, conn, error);
    std::vector<std::string> outputs;
    size_t out_bytes = 0;
    if (control && OutputSlots(o, *control, request, outputs, out_bytes, error))
      shm = SystemShmRegion::Create(*control, request, outputs, out_bytes, error);
    if (!shm) {
      std::cerr << "infer-perf: --shared-memory system: " << error << "\n";
      return 1;
    }
  }
  TransportFactory factory = MakeTransportFactory(o.protocol, o.url, conn, request, o.streaming);
  if (!factory) {
    std::cerr << "infer-perf: protocol '" << o.protocol << "' is not available in this build\n";
    return 1;
  }
  if (!o.json) {
    std::printf(
        "*** Measurement Settings ***\n  Model: %s  Protocol: %s  Batch size: %d\n"
        "  Window: %d ms, stable when 3 windows agree within %.0f%% on throughput and %s\n\n",
        o.model.c_str(), o.protocol.c_str(), o.batch, o.interval_ms, o.stability * 100,
        o.percentile > 0 ? ("p" + std::to_string(int(o.percentile)) + " latency").c_str()
                         : "average latency");
  }
  std::vector<LevelResult> results;
  if (o.rate_mode) {
    for (double r = o.r_start; r <= o.r_end + 1e-9; r += o.r_step) {
      results.push_back(MeasureLevel(o, factory, 0, r, http));
    }
  } else {
    for (int c = o.c_start; c <= o.c_end; c += o.c_step) {
      results.push_back(MeasureLevel(o, factory, c, 0, http));
    }
  }
  Report(o, results);
  for (const auto& r : results) {
    if (r.client.requests == 0) return 1;
  }
  return 0;
}
