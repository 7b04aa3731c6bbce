#include "perf_report.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace inferd::perf {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// --collect-metrics in the JSON report: "server_metrics", with "gpus" empty
// when the server reports no GPU families.
void MetricsJson(JsonWriter& w, const ServerMetrics& m) {
  auto num = [&](const char* k, double v) {
    w.Key(k);
    w.Double(std::round(v * 100) / 100);
  };
  w.Key("server_metrics");
  w.StartObject();
  w.Key("scrapes");
  w.Int(m.scrapes);
  w.Key("gpus");
  w.StartArray();
  for (const auto& g : m.gpus) {
    w.StartObject();
    w.Key("uuid");
    w.String(g.uuid.c_str());
    num("utilization_avg", g.utilization_avg);
    num("power_usage_avg_w", g.power_avg_w);
    num("memory_used_max_bytes", g.memory_used_max);
    num("memory_total_bytes", g.memory_total);
    w.EndObject();
  }
  w.EndArray();
  if (m.has_cpu) {
    num("cpu_utilization_avg", m.cpu_utilization_avg);
    num("cpu_memory_used_max_bytes", m.cpu_memory_used_max);
    num("cpu_memory_total_bytes", m.cpu_memory_total);
  }
  num("requests", m.requests);
  num("inferences", m.inferences);
  num("executions", m.executions);
  num("request_us_per_request", m.request_us);
  num("queue_us_per_request", m.queue_us);
  num("compute_infer_us_per_request", m.compute_infer_us);
  num("pending_requests_avg", m.pending_avg);
  w.EndObject();
}

// --collect-metrics in the text report.
void MetricsText(const ServerMetrics& m) {
  if (m.scrapes == 0) {
    std::printf("  Server metrics: none scraped\n");
    return;
  }
  std::printf("  Server metrics (%d scrapes):", m.scrapes);
  if (m.gpus.empty()) std::printf(" no GPU metrics (the server reports none: CPU only);");
  for (const auto& g : m.gpus) {
    std::printf(" GPU %s: utilization %.1f%%, power %.1f W, memory %.0f of %.0f MiB;",
                g.uuid.c_str(), g.utilization_avg * 100, g.power_avg_w, g.memory_used_max / 1048576,
                g.memory_total / 1048576);
  }
  if (m.has_cpu) {
    std::printf(" CPU utilization %.1f%%, memory %.0f of %.0f MiB;", m.cpu_utilization_avg * 100,
                m.cpu_memory_used_max / 1048576, m.cpu_memory_total / 1048576);
  }
  std::printf(
      "\n    model: %.0f requests, %.0f inferences, %.0f executions, per request %.0f us "
      "(queue %.0f us, compute infer %.0f us), %.1f pending on average\n",
      m.requests, m.inferences, m.executions, m.request_us, m.queue_us, m.compute_infer_us,
      m.pending_avg);
}

// perf_analyzer's verbose CSV cells for GPU metrics: "uuid:value;" per GPU.
std::string GpuCell(const ServerMetrics& m, double GpuSummary::*field) {
  std::string cell;
  for (const auto& g : m.gpus) cell += g.uuid + ":" + std::to_string(g.*field) + ";";
  return cell;
}

// The results as one JSON object on stdout.
void ReportJson(const Options& o, const std::vector<LevelResult>& results) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  RunJson(w, o);
  w.Key("results");
  w.StartArray();
  for (const auto& r : results) {
    w.StartObject();
    if (o.rate_mode) {
      w.Key("request_rate");
      w.Double(r.rate);
    } else {
      w.Key("concurrency");
      w.Int(r.concurrency);
    }
    auto num = [&](const char* k, double v) {
      w.Key(k);
      w.Double(std::round(v * 100) / 100);
    };
    num("throughput_infer_per_sec", r.client.throughput);
    num("latency_avg_us", r.client.avg_us);
    num("latency_p50_us", r.client.p50_us);
    num("latency_p90_us", r.client.p90_us);
    num("latency_p95_us", r.client.p95_us);
    num("latency_p99_us", r.client.p99_us);
    num("server_queue_us", r.queue_us);
    num("server_compute_input_us", r.input_us);
    num("server_compute_infer_us", r.infer_us);
    num("server_compute_output_us", r.output_us);
    num("server_avg_batch", r.batch);
    LevelCountsJson(w, r);
    if (o.collect_metrics) MetricsJson(w, r.metrics);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  std::cout << buf.GetString() << std::endl;
}

// The results as text on stdout, one block per level.
void ReportText(const Options& o, const std::vector<LevelResult>& results) {
  for (const auto& r : results) {
    if (o.rate_mode)
      std::printf("Request rate: %.1f/s\n", r.rate);
    else
      std::printf("Concurrency: %d\n", r.concurrency);
    std::printf(
        "  Client: throughput %.2f infer/sec, latency avg %.0f us, p50 %.0f us, "
        "p90 %.0f us, p95 %.0f us, p99 %.0f us (%llu requests, %llu errors)%s\n",
        r.client.throughput, r.client.avg_us, r.client.p50_us, r.client.p90_us, r.client.p95_us,
        r.client.p99_us, (unsigned long long)r.client.requests, (unsigned long long)r.client.errors,
        r.stable ? "" : " [not stable]");
    std::printf(
        "  Server: queue %.0f us, compute input %.0f us, compute infer %.0f us, "
        "compute output %.0f us, average batch %.2f\n",
        r.queue_us, r.input_us, r.infer_us, r.output_us, r.batch);
    if (o.collect_metrics) MetricsText(r.metrics);
    if (!r.first_error.empty()) std::printf("  First error: %s\n", r.first_error.c_str());
  }
}

// The results as CSV into o.csv (perf_analyzer's columns).
void WriteCsv(const Options& o, const std::vector<LevelResult>& results) {
  std::ofstream f(o.csv);
  f << (o.rate_mode ? "Request Rate" : "Concurrency")
    << ",Inferences/Second,Avg latency,p50 latency,p90 latency,p95 latency,p99 latency,"
       "Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,"
       "Average Batch,Errors";
  const bool metrics = o.collect_metrics && o.verbose_csv;
  if (metrics) {
    f << ",Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory,"
         "Avg CPU Utilization,Max CPU Memory Usage,Server Requests,Server Request us";
  }
  f << "\n";
  for (const auto& r : results) {
    if (o.rate_mode)
      f << r.rate;
    else
      f << r.concurrency;
    f << "," << r.client.throughput << "," << r.client.avg_us << "," << r.client.p50_us << ","
      << r.client.p90_us << "," << r.client.p95_us << "," << r.client.p99_us << "," << r.queue_us
      << "," << r.input_us << "," << r.infer_us << "," << r.output_us << "," << r.batch << ","
      << r.client.errors;
    if (metrics) {
      const ServerMetrics& m = r.metrics;
      f << "," << GpuCell(m, &GpuSummary::utilization_avg) << ","
        << GpuCell(m, &GpuSummary::power_avg_w) << "," << GpuCell(m, &GpuSummary::memory_used_max)
        << "," << GpuCell(m, &GpuSummary::memory_total) << "," << m.cpu_utilization_avg << ","
        << m.cpu_memory_used_max << "," << m.requests << "," << m.request_us;
    }
    f << "\n";
  }
}

// A latency-throughput plot into o.plot (PNG, or SVG by its extension),
// through gnuplot; its data file is o.plot + ".dat".
void WritePlot(const Options& o, const std::vector<LevelResult>& results) {
  const std::string data = o.plot + ".dat";
  {
    std::ofstream f(data);
    for (const auto& r : results)
      f << r.client.throughput << " " << r.client.p99_us / 1000 << " " << r.client.avg_us / 1000
        << "\n";
  }
  const bool svg = o.plot.size() > 4 && o.plot.substr(o.plot.size() - 4) == ".svg";
  const std::string script = std::string("set terminal ") + (svg ? "svg" : "pngcairo") +
                             " size 800,500; set output '" + o.plot +
                             "'; set xlabel 'throughput (infer/s)'; set ylabel 'latency (ms)';"
                             " set grid; plot '" +
                             data +
                             "' using 1:2 with linespoints title 'p99',"
                             " '" +
                             data + "' using 1:3 with linespoints title 'average'";
  const std::string cmd = "gnuplot -e \"" + script + "\"";
  if (std::system(cmd.c_str()) != 0) std::cerr << "infer-perf: gnuplot failed (is it installed?)\n";
}

}  // namespace

void Report(const Options& o, const std::vector<LevelResult>& results) {
  if (o.json) {
    ReportJson(o, results);
  } else {
    ReportText(o, results);
  }
  if (!o.csv.empty()) WriteCsv(o, results);
  if (!o.plot.empty()) WritePlot(o, results);
}

}  // namespace inferd::perf
