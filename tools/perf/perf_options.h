// infer-perf's command line: perf_analyzer's common flags and a few of our own.
// ParseOptions prints the usage and exits with status 2 on a bad flag.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "inferd/client/client_options.h"

namespace inferd::perf {

// How infer-perf reaches the server: perf_analyzer's --ssl-grpc-*,
// --ssl-https-* and -H flags (ParseConnectionFlag).
struct ConnectionOptions {
  client::ClientOptions grpc;  // -i grpc: --ssl-grpc-*, -H as metadata
  client::ClientOptions http;  // every HTTP connection: --ssl-https-*, -H
  // The options for `protocol` ("http" or "grpc").
  const client::ClientOptions& For(const std::string& protocol) const {
    return protocol == "grpc" ? grpc : http;
  }
};

struct Options {
  std::string model;
  std::string version;
  std::string url = "localhost:8000";
  std::string protocol = "http";
  int batch = 1;
  int c_start = 1, c_end = 1, c_step = 1;
  bool rate_mode = false;
  double r_start = 0, r_end = 0, r_step = 1;
  bool poisson = false;
  int interval_ms = 5000;
  double percentile = 0;  // 0: stability on average latency
  std::string input_data = "random";
  bool streaming = false;
  std::string csv;
  bool json = false;
  bool verbose = false;  // -v: every window's figures on stderr
  double stability = 0.1;
  int max_trials = 10;
  int max_threads = 64;
  int warmup_ms = -1;  // default: one interval
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string plot;
  std::string shared_memory = "none";  // none | system
  size_t output_shm_size = 0;          // 0: from the model's metadata
  ConnectionOptions connection;

  // ---- perf_analyzer's load, measurement and report flags (perf_options_load.cc) ----
  bool concurrency_set = false, rate_set = false;  // the range flags were given
  bool async = false;                              // -a/--async
  bool sync_forced = false;                        // --sync (sequence models default to async)
  bool count_windows = false;                      // --measurement-mode count_windows
  int request_count = 50;                          // --measurement-request-count
  std::string request_intervals;                   // --request-intervals FILE
  std::vector<uint64_t> intervals_us;              // its gaps, read by CheckLoadOptions
  int string_length = 128;                         // --string-length
  std::string string_data;                         // --string-data
  bool string_data_set = false;
  int sequence_length = 20;                             // --sequence-length
  double sequence_variation = 20;                       // --sequence-length-variation, percent
  uint64_t sequence_id_start = 1, sequence_id_end = 0;  // --sequence-id-range; end 0: unbounded
  int num_sequences = 4;                                // --num-of-sequences (rate mode)
  bool serial_sequences = false;                        // --serial-sequences
  bool sequence_flags_set = false;                      // any sequence flag was given
  bool collect_metrics = false;                         // --collect-metrics
  std::string metrics_url = "localhost:8002/metrics";
  int metrics_interval_ms = 1000;
  bool verbose_csv = false;               // --verbose-csv
  double latency_threshold_ms = 0;        // -l/--latency-threshold; 0: none
  bool binary_search = false;             // --binary-search
  std::string grpc_compression = "none";  // --grpc-compression-algorithm

  // ---- --search (perf_options_search.cc, perf_search*.cc) ----
  bool search = false;                       // --search (or any --search-* list)
  std::vector<int> search_max_batch_sizes;   // --search-max-batch-sizes; empty: the model's
  std::vector<int> search_dynamic_batching;  // --search-dynamic-batching on,off as 1,0
  std::vector<int> search_instance_counts;   // --search-instance-counts
  int search_max_concurrency = 256;          // --search-max-concurrency (doubling sweep)
  bool ConfigSearch() const {
    return !search_max_batch_sizes.empty() || !search_dynamic_batching.empty() ||
           !search_instance_counts.empty();
  }
};

// Parses argv; on an unknown or malformed flag prints the error and the usage
// to stderr and exits(2).
Options ParseOptions(int argc, char** argv);

// Usage text and exit(2) with `error` (perf_options.cc).
[[noreturn]] void Usage(const std::string& error);

// perf_analyzer's load, sequence, measurement, metrics and report flags
// (perf_options_load.cc). ApplyLoadFlag returns false for a flag it does not
// know; perf_analyzer flags infer-perf does not implement end the process
// with "--X is not supported (...)" and status 2. CheckLoadOptions checks
// combinations and reads the --request-intervals file (exit 2 on error).
bool ApplyLoadFlag(const std::string& flag, const std::function<std::string()>& value, Options& o);
void CheckLoadOptions(Options& o);
const char* LoadUsageText();

// --search and its lists (perf_options_search.cc); the same contract as
// ApplyLoadFlag and CheckLoadOptions.
bool ApplySearchFlag(const std::string& flag, const std::function<std::string()>& value,
                     Options& o);
void CheckSearchOptions(const Options& o);
const char* SearchUsageText();

}  // namespace inferd::perf
