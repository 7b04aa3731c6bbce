// perf_analyzer's load, sequence, measurement, metrics and report flags, and
// the perf_analyzer flags infer-perf refuses by name (docs/clients.md has
// the whole table). Kept apart from perf_options.cc so that the connection
// flags (TLS, -H) and these grow independently.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "perf_options.h"

namespace inferd::perf {
namespace {

// perf_analyzer flags infer-perf does not implement, and why. Refusing them
// by name beats an "unknown flag" (the user knows the flag exists) and beats
// parsing and ignoring them (the run would measure something else).
const std::map<std::string, std::string>& Unsupported() {
  static const std::map<std::string, std::string> m = {
      {"--service-kind", "infer-perf talks to KServe v2 servers only (triton)"},
      {"--bls-composing-models", "BLS models are not measured separately"},
      {"--model-signature-name", "TensorFlow Serving only"},
      {"--warmup-request-count", "use --warmup-ms"},
      {"--request-count", "use --measurement-mode count_windows"},
      {"--periodic-concurrency-range", "no periodic concurrency mode"},
      {"--request-period", "no periodic concurrency mode"},
      {"--request-parameter", "no custom request parameters"},
      {"--input-tensor-format", "inputs are always sent as binary tensors"},
      {"--output-tensor-format", "outputs are always asked for as binary tensors"},
      {"--profile-export-file", "no profile export; use --json"},
      {"--trace-level", "set tracing on the server (inferd --trace-config)"},
      {"--trace-rate", "set tracing on the server (inferd --trace-config)"},
      {"--trace-count", "set tracing on the server (inferd --trace-config)"},
      {"--log-frequency", "set tracing on the server (inferd --trace-config)"},
      {"--triton-server-directory", "no C API mode"},
      {"--model-repository", "no C API mode"},
      {"--data-directory", "deprecated in perf_analyzer; use --input-data FILE"},
      {"-c", "deprecated in perf_analyzer; use --concurrency-range"},
      {"-d", "deprecated in perf_analyzer; use --concurrency-range"},
      {"-t", "deprecated in perf_analyzer; use --concurrency-range"},
      {"-z", "deprecated in perf_analyzer; use --input-data zero"},
  };
  return m;
}

// --sequence-id-range START[:END]: END exclusive, and above START.
void ParseIdRange(const std::string& s, Options& o) {
  const auto colon = s.find(':');
  o.sequence_id_start = std::stoull(s.substr(0, colon));
  o.sequence_id_end = colon == std::string::npos ? 0 : std::stoull(s.substr(colon + 1));
  if (o.sequence_id_start == 0 ||
      (colon != std::string::npos && o.sequence_id_end <= o.sequence_id_start)) {
    Usage("--sequence-id-range needs START[:END] with 0 < START < END (END excluded)");
  }
}

bool ApplySequenceFlag(const std::string& a, const std::function<std::string()>& value,
                       Options& o) {
  if (a == "--sequence-length")
    o.sequence_length = std::stoi(value());
  else if (a == "--sequence-length-variation")
    o.sequence_variation = std::stod(value());
  else if (a == "--sequence-id-range")
    ParseIdRange(value(), o);
  else if (a == "--num-of-sequences")
    o.num_sequences = std::stoi(value());
  else if (a == "--serial-sequences")
    o.serial_sequences = true;
  else
    return false;
  o.sequence_flags_set = true;
  return true;
}

bool ApplyMetricsFlag(const std::string& a, const std::function<std::string()>& value, Options& o) {
  if (a == "--collect-metrics")
    o.collect_metrics = true;
  else if (a == "--metrics-url")
    o.metrics_url = value();
  else if (a == "--metrics-interval")
    o.metrics_interval_ms = std::stoi(value());
  else if (a == "--verbose-csv")
    o.verbose_csv = true;
  else
    return false;
  return true;
}

void SetMeasurementMode(const std::string& m, Options& o) {
  if (m != "time_windows" && m != "count_windows")
    Usage("--measurement-mode must be time_windows or count_windows");
  o.count_windows = m == "count_windows";
}

void SetCompression(const std::string& c, Options& o) {
  if (c != "none" && c != "gzip" && c != "deflate")
    Usage("--grpc-compression-algorithm must be none, gzip or deflate");
  o.grpc_compression = c;
}

// The gaps of --request-intervals: one whole number of microseconds a line
// (blank lines skipped), at least one, not all zero.
void ReadIntervals(Options& o) {
  std::ifstream f(o.request_intervals);
  if (!f) Usage("--request-intervals: cannot read '" + o.request_intervals + "'");
  std::string line;
  int n = 0;
  uint64_t total = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    size_t used = 0;
    uint64_t v = 0;
    try {
      v = std::stoull(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || line.find_first_not_of(" \t\r", used) != std::string::npos ||
        line.find('-') != std::string::npos) {
      Usage("--request-intervals: " + o.request_intervals + " line " + std::to_string(n) +
            ": expected a whole number of microseconds, got '" + line + "'");
    }
    o.intervals_us.push_back(v);
    total += v;
  }
  if (o.intervals_us.empty() || total == 0)
    Usage("--request-intervals: " + o.request_intervals + " has no interval above 0");
}

}  // namespace

const char* LoadUsageText() {
  return R"(  -a, --async / --sync           asynchronous request API (default: sync; async for
                                 sequence models)
  --measurement-mode time_windows|count_windows   count_windows: a window lasts at least
                                 1 s and until --measurement-request-count requests completed
  --measurement-request-count N  requests per count window (default 50)
  --request-intervals FILE       gaps in microseconds, one a line, replayed cyclically
  -l, --latency-threshold MS     stop the sweep once the average latency exceeds MS
  --binary-search                binary search between the range's start and end (needs -l)
  --string-length N              length of random strings for BYTES inputs (default 128)
  --string-data S                this string in every BYTES element
  --sequence-length N            requests per sequence (default 20), sequence models only
  --sequence-length-variation P  +/- P% (default 20)
  --sequence-id-range S[:E]      sequence ids from S up to E excluded (default 1, unbounded)
  --num-of-sequences N           concurrent sequences in rate mode (default 4)
  --serial-sequences             at most one request in flight per sequence
  --collect-metrics              scrape the server's Prometheus metrics during each window
  --metrics-url URL              (default localhost:8002/metrics)
  --metrics-interval MS          scrape period (default 1000)
  --verbose-csv                  the -f CSV gets the server metrics columns
  --grpc-compression-algorithm none|gzip|deflate   compress gRPC requests
)";
}

bool ApplyLoadFlag(const std::string& a, const std::function<std::string()>& value, Options& o) {
  if (auto it = Unsupported().find(a); it != Unsupported().end()) {
    std::cerr << "infer-perf: " << a << " is not supported (" << it->second << ")\n";
    std::exit(2);
  }
  if (ApplySequenceFlag(a, value, o) || ApplyMetricsFlag(a, value, o) ||
      ApplySearchFlag(a, value, o))
    return true;
  if (a == "-a" || a == "--async")
    o.async = true;
  else if (a == "--sync")
    o.sync_forced = true;
  else if (a == "--measurement-mode")
    SetMeasurementMode(value(), o);
  else if (a == "--measurement-request-count")
    o.request_count = std::stoi(value());
  else if (a == "--request-intervals")
    o.request_intervals = value();
  else if (a == "-l" || a == "--latency-threshold")
    o.latency_threshold_ms = std::stod(value());
  else if (a == "--binary-search")
    o.binary_search = true;
  else if (a == "--string-length")
    o.string_length = std::stoi(value());
  else if (a == "--string-data") {
    o.string_data = value();
    o.string_data_set = true;
  } else if (a == "--grpc-compression-algorithm")
    SetCompression(value(), o);
  else
    return false;
  return true;
}

void CheckLoadOptions(Options& o) {
  if (o.async && o.sync_forced) Usage("-a/--async and --sync exclude each other");
  if (o.request_count < 1 || o.string_length < 0 || o.sequence_length < 1 ||
      o.sequence_variation < 0 || o.sequence_variation >= 100 || o.num_sequences < 1 ||
      o.metrics_interval_ms < 10 || o.latency_threshold_ms < 0) {
    Usage(
        "bad --measurement-request-count, --string-length, --sequence-length, "
        "--sequence-length-variation (0..99), --num-of-sequences or --metrics-interval (>= 10)");
  }
  if (!o.request_intervals.empty()) {
    if (o.concurrency_set || o.rate_set)
      Usage("--request-intervals cannot be used with --concurrency-range or --request-rate-range");
    ReadIntervals(o);
    o.rate_mode = true;
  }
  const bool open_end = o.request_intervals.empty() && (o.rate_mode ? o.r_end == 0 : o.c_end == 0);
  CheckSearchOptions(o);
  // --search stops an open range where throughput stops growing.
  if (open_end && o.latency_threshold_ms == 0 && !o.search)
    Usage("a range with end 0 needs -l/--latency-threshold");
  if (o.binary_search && (o.latency_threshold_ms == 0 || open_end || !o.request_intervals.empty()))
    Usage("--binary-search needs a range with an explicit start and end, and -l");
  if (o.grpc_compression != "none" && o.protocol != "grpc")
    Usage("--grpc-compression-algorithm needs -i grpc");
  if (o.streaming && (o.async || o.grpc_compression != "none"))
    Usage("--streaming with -a or --grpc-compression-algorithm is not supported");
  if (o.verbose_csv && o.csv.empty()) Usage("--verbose-csv needs -f FILE");
}

}  // namespace inferd::perf
