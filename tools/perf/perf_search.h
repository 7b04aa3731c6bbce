// infer-perf --search, the pure parts (unit-tested in tests/unit/perf_search_test.cc):
// the candidate settings, the concurrency plan, when a sweep stops, the
// throughput/latency Pareto front and the winner under a latency bound; and
// the config edits the load API's override gets (perf_search_config.cc).
// No I/O, no threads; errors are returned as text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace inferd::perf {

// What one candidate config sets (the rest of the model's config is kept).
struct SearchSettings {
  int max_batch_size = 0;
  bool dynamic_batching = false;
  int instance_count = 1;  // instances in all (the groups' counts summed)
  bool operator==(const SearchSettings&) const = default;
};

// "max_batch_size 8, dynamic batching on, 2 instances".
std::string Describe(const SearchSettings& s);

// The candidates: `original` first, then every combination of the lists
// (batch size outer, then dynamic batching, then instance count; an empty
// list keeps the original's value), without repeats.
std::vector<SearchSettings> SearchCandidates(const SearchSettings& original,
                                             const std::vector<int>& max_batch_sizes,
                                             const std::vector<int>& dynamic_batching,
                                             const std::vector<int>& instance_counts);

// The concurrencies one candidate is measured at: doubling from `start`
// up to `max`, or a range start..end step `step` (end 0: unbounded).
struct ConcurrencyPlan {
  int start = 1;
  int end = 0;  // range: the last level; 0: none (stops on the bound or the plateau)
  int step = 1;
  bool doubling = true;
  int max = 256;  // doubling: the last level tried
  // The level after `c`; 0 when the plan has no more.
  int Next(int c) const;
  // Whether the sweep stops once throughput stops growing (doubling or an
  // open range); an explicit range is measured to its end (or the bound).
  bool StopsOnPlateau() const { return doubling || end == 0; }
};

// One measured level of one candidate.
struct SearchPoint {
  size_t candidate = 0;
  int concurrency = 0;
  double throughput = 0;  // inferences per second
  double latency_us = 0;  // the latency compared with the bound (p99 or --percentile)
  bool ok = true;         // requests succeeded and none failed: it may be on the front
};

// Whether the sweep of one candidate goes on after `levels` (its points so
// far, in order): not after a level over `bound_us` (0: no bound) or one
// that failed, nor (with `plateau`) after `patience` levels in a row whose
// throughput is not at least `min_gain` above the best level before each.
// One level is not enough: with dynamic batching and one instance,
// concurrency 2 runs batches of 1 (each request arrives while the other
// executes) and only 4 shows what batching gives.
bool SweepGoesOn(const std::vector<SearchPoint>& levels, double bound_us, bool plateau,
                 double min_gain = 0.05, int patience = 2);

// The indices of the points on the throughput/latency Pareto front, by
// throughput ascending: ok points that no other ok point beats (at least
// as much throughput and at most as much latency, one of them strictly).
// Of equal points the first is kept.
std::vector<size_t> ParetoFront(const std::vector<SearchPoint>& points);

// The point to recommend: the ok point with the most throughput whose
// latency is within `bound_us` (0: no bound); ties go to the lower latency,
// then to the earlier point. None when no point is within the bound.
std::optional<size_t> PickWinner(const std::vector<SearchPoint>& points, double bound_us);

// ---- the model's config (JSON as GET /v2/models/M/config answers; perf_search_config.cc) ----

// The settings `config_json` has; false with `error` when it is not a
// model config.
bool SettingsFromConfig(const std::string& config_json, SearchSettings& out, std::string& error);

// `config_json` with `s` applied, for the load API's "config" parameter:
// max_batch_size; dynamic_batching kept (its preferred sizes above the new
// maximum dropped, and a list of the old maximum alone, which is what the
// server fills in when there is none), added empty, or removed; for a new
// instance count one instance group (the first one's kind and devices) with
// it, and without the server's instance_layout "auto" mark (an unchanged
// count keeps the groups and the mark as they are).
std::string OverrideConfig(const std::string& config_json, const SearchSettings& s);

// The fields `OverrideConfig(config_json, s)` sets, as config.pbtxt text
// (protobuf text format; fields at their default value left out; groups
// left as they are show as a comment).
std::string ConfigText(const std::string& config_json, const SearchSettings& s);

}  // namespace inferd::perf
