// infer-perf's command line: perf_analyzer's common flags and a few of our own.
// ParseOptions prints the usage and exits with status 2 on a bad flag.
#pragma once

#include <cstdint>
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
  double stability = 0.1;
  int max_trials = 10;
  int max_threads = 64;
  int warmup_ms = -1;  // default: one interval
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string plot;
  std::string shared_memory = "none";  // none | system
  size_t output_shm_size = 0;          // 0: from the model's metadata
  ConnectionOptions connection;
};

// Parses argv; on an unknown or malformed flag prints the error and the usage
// to stderr and exits(2).
Options ParseOptions(int argc, char** argv);

}  // namespace inferd::perf
