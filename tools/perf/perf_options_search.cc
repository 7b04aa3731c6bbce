// infer-perf's --search flags: Model Analyzer's kind of sweep (docs/clients.md,
// "infer-perf --search"). Parsing only; the search is perf_search_run.cc.
#include <sstream>

#include "perf_options.h"

namespace inferd::perf {
namespace {

// "1,2,8": positive whole numbers, at least one.
std::vector<int> PositiveList(const std::string& flag, const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1)
      Usage(flag + " needs whole numbers above 0, separated by commas (got '" + s + "')");
    out.push_back(v);
  }
  if (out.empty()) Usage(flag + " needs at least one value");
  return out;
}

// "on,off" as 1,0.
std::vector<int> OnOffList(const std::string& flag, const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item != "on" && item != "off") Usage(flag + " takes on, off or on,off");
    out.push_back(item == "on" ? 1 : 0);
  }
  if (out.empty()) Usage(flag + " takes on, off or on,off");
  return out;
}

}  // namespace

const char* SearchUsageText() {
  return R"(Search (what Model Analyzer sweeps; docs/clients.md):
  --search                       sweep concurrency (doubling from 1 until throughput grows
                                 < 5%, or --concurrency-range), report the throughput/latency
                                 Pareto front and the best level within -l (p99, or
                                 --percentile); with a --search-* list also configs:
  --search-max-batch-sizes L     max_batch_size values, e.g. 1,4,16   (each list: the model's
  --search-dynamic-batching L    on, off or on,off                     own value when not
  --search-instance-counts L     instance counts, e.g. 1,2             given)
                                 every combination is loaded through the load API's config
                                 override (server in --model-control-mode=explicit), measured,
                                 and the model's repository config loaded again at the end
  --search-max-concurrency N     the doubling sweep's last level (default 256)
)";
}

bool ApplySearchFlag(const std::string& a, const std::function<std::string()>& value, Options& o) {
  if (a == "--search")
    o.search = true;
  else if (a == "--search-max-batch-sizes")
    o.search_max_batch_sizes = PositiveList(a, value());
  else if (a == "--search-dynamic-batching")
    o.search_dynamic_batching = OnOffList(a, value());
  else if (a == "--search-instance-counts")
    o.search_instance_counts = PositiveList(a, value());
  else if (a == "--search-max-concurrency")
    o.search_max_concurrency = PositiveList(a, value()).at(0);
  else
    return false;
  if (a != "--search-max-concurrency") o.search = true;  // a list implies --search
  return true;
}

void CheckSearchOptions(const Options& o) {
  if (!o.search) return;
  if (o.rate_mode || !o.request_intervals.empty())
    Usage("--search sweeps concurrency: not with --request-rate-range or --request-intervals");
  if (o.binary_search) Usage("--search and --binary-search exclude each other");
  if (!o.csv.empty() || !o.plot.empty())
    Usage("--search reports as text or --json, not with -f or --plot");
  for (int b : o.search_max_batch_sizes) {
    if (b < o.batch)
      Usage("--search-max-batch-sizes: " + std::to_string(b) + " is below the client batch (-b " +
            std::to_string(o.batch) + ")");
  }
}

}  // namespace inferd::perf
