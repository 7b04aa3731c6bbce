// infer-perf --search against a server: measures each candidate config
// (loaded through the load API's config override when --search-* lists are
// given) over a concurrency sweep, then reports the throughput/latency
// Pareto front and the winner within -l (perf_search_report.cc), and loads
// the model's repository config again. Threading: the calling thread only
// (the measurement itself runs the load generator's threads). Errors: on
// stderr and in the exit status.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inferd/client/http_client.h"
#include "perf_options.h"
#include "perf_report.h"
#include "perf_search.h"

namespace inferd::perf {

// One candidate config and what was measured with it.
struct SearchCandidate {
  SearchSettings settings;
  bool original = false;  // the model as the server had it: measured without a load
  std::string error;      // the load with this config failed: nothing measured
  std::vector<LevelResult> levels;
};

struct SearchOutcome {
  std::string latency_name;  // "p99", or "p<P>" with --percentile
  double bound_us = 0;       // -l in microseconds; 0: none
  bool config_search = false;
  std::string config_json;  // the model's config as the server had it
  std::vector<SearchCandidate> candidates;
  std::vector<SearchPoint> points;  // every measured level, candidates in order
  std::vector<size_t> front;        // indices into points
  std::optional<size_t> winner;     // index into points
  bool restored = false;            // config search: the repository config serves again
  std::string restore_error;
};

// Measures one concurrency level of the model as it is loaded now.
using MeasureFn = std::function<LevelResult(int concurrency)>;

// Runs the search over `http` (config, load, unload) and `measure`, writes
// the report, and returns the exit status: 0, or 1 when the config could
// not be read, no level succeeded, or the repository config could not be
// loaded again; 130 after a Ctrl-C in a config search (caught from then on:
// the level being measured completes, the repository config is loaded
// again and the levels measured are reported; a second Ctrl-C quits).
int RunSearch(const Options& o, client::HttpClient* http, const MeasureFn& measure);

// The text or --json report of `s` on stdout (perf_search_report.cc).
void ReportSearch(const Options& o, const SearchOutcome& s);

// "max_batch_size 8, dynamic batching off, 1 instance (the model's)" for
// candidate `i` of `s`; "the model as it serves" when its config was not
// read (perf_search_report.cc).
std::string CandidateText(const SearchOutcome& s, size_t i);

}  // namespace inferd::perf
