// infer-batcher: merges the requests of many small clients into larger
// calls to inferd (docs/batcher.md). Flags are listed by --help.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "batcher/batcher.h"
#include "middleman/inferd_flags.h"

namespace {

constexpr char kUsage[] =
    "usage: infer-batcher --upstream HOST:GRPC_PORT[,HOST:GRPC_PORT...] [options]\n"
    "Flags take their value as --flag=VALUE or --flag VALUE.\n"
    "  --http-port P           HTTP port (default 8000; 0 picks a free one)\n"
    "  --http-address A        HTTP address (default 0.0.0.0)\n"
    "  --grpc-port G           gRPC port (default 8001; 0 picks a free one, -1 turns it off)\n"
    "  --grpc-address A        gRPC address (default 0.0.0.0)\n"
    "  --upstream LIST         inferd's gRPC endpoints, comma-separated (required); each\n"
    "                          entry may be xds:///NAME (hosts from $GRPC_XDS_BOOTSTRAP)\n"
    "  --max-batch-size N      rows per upstream call (default 0: the model's\n"
    "                          max_batch_size; never above it)\n"
    "  --max-delay-us D        longest wait of a request for its batch (default 500)\n"
    "  --max-inflight-batches N  upstream calls of one batch key in flight before\n"
    "                          requests wait for a batch (default 2: a request that\n"
    "                          finds its model idle goes at once; 0: always wait for a\n"
    "                          full batch or --max-delay-us)\n"
    "  --model-max-batch-size M=N  the same for model M (repeatable)\n"
    "  --model-max-delay-us M=D    the same for model M (repeatable)\n"
    "  --model-info-ttl-ms T   how long a model's config is trusted (default 30000)\n"
    "  --channels N            gRPC channels per upstream (default 4)\n"
    "  --timeout-ms T          deadline of an upstream call without a caller's deadline\n"
    "                          (default 10000)\n"
    "  --http-threads N        HTTP I/O threads (default 2)\n"
    "  --compute-threads N     threads encoding HTTP answers (default 2)\n"
    "  --max-message-bytes B   largest gRPC message and HTTP body (default 67108864)\n"
    "  --drain-delay-secs S    on SIGTERM, keep serving (not ready) this long (default 0)\n"
    "  --exit-timeout-secs S   then wait this long for answers owed (default 30)\n"
    "TLS and headers to inferd (as infer-gateway's):\n";

void PrintUsage(std::ostream& out) { out << kUsage << inferd::middleman::kInferdConnectionUsage; }

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr << "infer-batcher: " << problem << "\n";
  PrintUsage(std::cerr);
  std::exit(2);
}

int64_t Int(const std::string& flag, const std::string& value, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v < lo || v > hi) {
    Usage(flag + " wants an integer between " + std::to_string(lo) + " and " + std::to_string(hi) +
          ", got '" + value + "'");
  }
  return v;
}

// "MODEL=N" of a per-model flag.
std::pair<std::string, int64_t> ModelValue(const std::string& flag, const std::string& value,
                                           int64_t lo, int64_t hi) {
  const size_t eq = value.rfind('=');
  if (eq == std::string::npos || eq == 0) Usage(flag + " wants MODEL=N, got '" + value + "'");
  return {value.substr(0, eq), Int(flag, value.substr(eq + 1), lo, hi)};
}

struct Flags {
  inferd::middleman::ServiceOptions service;
  inferd::middleman::InferdPoolOptions pool;
  std::vector<std::string> upstreams;
  inferd::middleman::InferdConnectionFlags connection;
  inferd::batcher::BatcherOptions batcher;
  int drain_delay_secs = 0;
  int exit_timeout_secs = 30;
};

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// NOLINTNEXTLINE(readability-function-size): a flag table
bool ApplyFlag(const std::string& flag, const std::string& v, Flags& f) {
  auto& b = f.batcher;
  if (flag == "--http-port") {
    f.service.http_port = static_cast<uint16_t>(Int(flag, v, 0, 65535));
  } else if (flag == "--http-address") {
    f.service.http_address = v;
  } else if (flag == "--grpc-port") {
    f.service.grpc_port = static_cast<int>(Int(flag, v, -1, 65535));
  } else if (flag == "--grpc-address") {
    f.service.grpc_address = v;
  } else if (flag == "--upstream") {
    f.upstreams = SplitList(v);
  } else if (flag == "--max-batch-size") {
    b.max_batch_size = Int(flag, v, 0, 1 << 20);
  } else if (flag == "--max-delay-us") {
    b.max_delay = std::chrono::microseconds(Int(flag, v, 0, 60000000));
  } else if (flag == "--max-inflight-batches") {
    b.max_in_flight = static_cast<int>(Int(flag, v, 0, 1 << 16));
  } else if (flag == "--model-max-batch-size") {
    auto [model, rows] = ModelValue(flag, v, 1, 1 << 20);
    b.model_max_batch_size[model] = rows;
  } else if (flag == "--model-max-delay-us") {
    auto [model, us] = ModelValue(flag, v, 0, 60000000);
    b.model_max_delay[model] = std::chrono::microseconds(us);
  } else if (flag == "--model-info-ttl-ms") {
    b.model_info_ttl = std::chrono::milliseconds(Int(flag, v, 0, 86400000));
  } else if (flag == "--channels") {
    f.pool.channels = static_cast<int>(Int(flag, v, 1, 256));
  } else if (flag == "--timeout-ms") {
    f.pool.default_timeout = std::chrono::milliseconds(Int(flag, v, 1, 3600000));
  } else if (flag == "--http-threads") {
    f.service.http_threads = static_cast<int>(Int(flag, v, 1, 256));
  } else if (flag == "--compute-threads") {
    f.service.compute_threads = static_cast<int>(Int(flag, v, 1, 256));
  } else if (flag == "--max-message-bytes") {
    const auto bytes = Int(flag, v, 1 << 16, 1 << 30);
    f.service.grpc_max_message_bytes = static_cast<int>(bytes);
    f.service.max_body_bytes = static_cast<size_t>(bytes);
    f.pool.max_message_bytes = static_cast<int>(bytes);
    f.batcher.max_body_bytes = static_cast<size_t>(bytes);
  } else if (flag == "--drain-delay-secs") {
    f.drain_delay_secs = static_cast<int>(Int(flag, v, 0, 86400));
  } else if (flag == "--exit-timeout-secs") {
    f.exit_timeout_secs = static_cast<int>(Int(flag, v, 0, 86400));
  } else {
    auto connection = inferd::middleman::ApplyInferdConnectionFlag(flag, v, f.connection, f.pool);
    if (!connection.ok()) Usage(connection.status().message());
    return *connection;
  }
  return true;
}

// Reads the command line into `f`; false when --help printed the usage.
bool ParseFlags(int argc, char** argv, Flags& f) {
  f.service.name = "batcher";
  f.service.http_port = 8000;
  f.service.grpc_port = 8001;
  f.service.grpc_max_message_bytes = 64 << 20;
  f.service.max_body_bytes = 64 << 20;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      PrintUsage(std::cout);
      return false;
    }
    if (flag == "--inferd-ssl") {
      f.connection.tls = true;
      continue;
    }
    std::string value;
    const size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else {
      if (i + 1 >= argc) Usage("missing value after " + flag);
      value = argv[++i];
    }
    if (!ApplyFlag(flag, value, f)) Usage("unknown flag " + flag);
  }
  if (f.upstreams.empty()) Usage("--upstream is required");
  const inferd::Status tls = inferd::middleman::FinishInferdConnectionFlags(f.connection, f.pool);
  if (!tls.ok()) Usage(tls.message());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace inferd;
  middleman::Service::BlockShutdownSignals();
  Flags f;
  if (!ParseFlags(argc, argv, f)) return 0;
  middleman::Service service(f.service);
  std::vector<std::unique_ptr<middleman::InferdPool>> pools;
  std::vector<middleman::InferdPool*> borrowed;
  for (const std::string& url : f.upstreams) {
    middleman::InferdPoolOptions options = f.pool;
    options.url = url;
    pools.push_back(std::make_unique<middleman::InferdPool>(options, &service.metrics()));
    borrowed.push_back(pools.back().get());
  }
  batcher::Batcher batcher(service, borrowed, f.batcher);
  Status s = service.Start();
  if (!s.ok()) {
    std::cerr << "infer-batcher: " << s.message() << "\n";
    return 1;
  }
  std::cerr << "infer-batcher: forwarding to";
  for (const std::string& url : f.upstreams) std::cerr << " " << url;
  std::cerr << (f.pool.credentials ? " over TLS" : "") << "\n";
  if (service.grpc_port() >= 0) {
    std::cerr << "infer-batcher: gRPC listening on " << f.service.grpc_address << ":"
              << service.grpc_port() << "\n";
  }
  std::cerr << "infer-batcher: HTTP listening on " << f.service.http_address << ":"
            << service.http_port() << std::endl;
  const int sig = middleman::Service::WaitForShutdownSignal();
  std::cerr << "infer-batcher: " << strsignal(sig) << ", draining" << std::endl;
  batcher.Drain();
  if (sig == SIGTERM && f.drain_delay_secs > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(f.drain_delay_secs));
  }
  batcher.Flush();
  service.Stop(std::chrono::seconds(f.exit_timeout_secs));
  for (auto& pool : pools) pool->Shutdown();
  std::cerr << "infer-batcher: stopped" << std::endl;
  return 0;
}
