// infer-perf's results: what one load level measured, and the reports
// written from them (text or JSON on stdout, CSV, a gnuplot chart).
#pragma once

#include <string>
#include <vector>

#include "latency_stats.h"
#include "perf_metrics.h"
#include "perf_options.h"

namespace inferd::perf {

// One load level (a concurrency, or a request rate in rate mode).
struct LevelResult {
  int concurrency = 0;
  double rate = 0;
  WindowSummary client;
  bool stable = false;
  double queue_us = 0, input_us = 0, infer_us = 0, output_us = 0, batch = 0;
  std::string first_error;
  ServerMetrics metrics;  // --collect-metrics; metrics.scrapes == 0 otherwise
};

// What was measured (model, protocol, client batch size): the first fields
// of every JSON report, inside an object the caller opened. W: a rapidjson
// writer (a template, so this header needs no rapidjson).
template <class W>
void RunJson(W& w, const Options& o) {
  w.Key("model");
  w.String(o.model.c_str());
  w.Key("protocol");
  w.String(o.protocol.c_str());
  w.Key("batch_size");
  w.Int(o.batch);
}

// A level's request and error counts and whether its windows were stable,
// inside the level's object (every JSON report has them).
template <class W>
void LevelCountsJson(W& w, const LevelResult& r) {
  w.Key("requests");
  w.Uint64(r.client.requests);
  w.Key("errors");
  w.Uint64(r.client.errors);
  w.Key("stable");
  w.Bool(r.stable);
}

// Writes every report the options ask for: JSON (--json) or text on stdout,
// a CSV (-f), a plot (--plot). Failures of gnuplot are reported on stderr.
void Report(const Options& o, const std::vector<LevelResult>& results);

}  // namespace inferd::perf
