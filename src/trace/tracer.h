// Tracer: inferd's trace settings at run time (global and per model, as the
// trace extension reads and changes them) and the decision, once per
// request at the front end, whether to trace it.
//
// Settings follow Triton's TraceManager: the global setting starts from
// the command line (TraceConfig) and a model may override any of level,
// rate, count and log_frequency; a field a model does not override follows
// the global one, also after a global update. Clearing a model's field
// (JSON null / an empty gRPC value list) makes it follow the global one
// again; clearing a global field restores its start-up value. Each update
// starts that scope's sampling afresh: its own request counter, and the
// remaining count carried over.
//
// Sampling (PROTOCOL-NEXT §6.5): per scope, a counter counts every request;
// the n-th is traced when n % rate == 0 and the remaining count allows
// (-1: no limit; each trace takes one). In OpenTelemetry mode a request
// that carries a valid W3C context is always traced (when the level is not
// OFF), rate 0 then traces only those. In Triton mode nothing is traced
// without a trace file (Triton's rule), nor with rate 0.
//
// Cost when tracing is off everywhere: Active() is one relaxed atomic
// load; front ends call Sample only when it is true.
//
// Threading: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/thread_annotations.h"
#include "trace/request_trace.h"
#include "trace/trace_config.h"

namespace inferd::trace {

// One scope's settings as the API shows them (count: what is left).
struct TraceSettingValues {
  uint32_t level = kTraceLevelOff;
  uint32_t rate = 1000;
  int64_t count = -1;
  uint32_t log_frequency = 0;
};

// A change to one field: nothing (neither set), a new value, or clear.
template <typename T>
struct TraceSettingChange {
  std::optional<T> value;
  bool clear = false;
  bool given() const { return clear || value.has_value(); }
};

struct TraceSettingUpdate {
  TraceSettingChange<uint32_t> level;
  TraceSettingChange<uint32_t> rate;
  TraceSettingChange<int64_t> count;
  TraceSettingChange<uint32_t> log_frequency;
};

class Tracer {
 public:
  // `collector` receives every complete trace group (the Triton trace file
  // or the span builder); null: traces are sampled but go nowhere (tests).
  Tracer(TraceConfig config, std::shared_ptr<TraceCollector> collector);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // False when no request can be traced now: the request path's one check.
  bool Active() const { return active_.load(std::memory_order_relaxed); }

  // Whether to trace a request for `model` (the name in the request), and
  // its trace if so. `propagated`: the request's W3C context (only
  // extracted in OpenTelemetry mode): its `sampled` flag decides, set forces
  // sampling, clear refuses it.
  std::shared_ptr<RequestTrace> Sample(std::string_view model,
                                       std::optional<TraceContext> propagated = std::nullopt);

  // The settings in force for `model` ("" : the global ones).
  TraceSettingValues Get(const std::string& model) const;
  // Applies an API update to `model`'s settings ("" : global). Errors:
  // InvalidArgument "Attempting to set invalid trace setting :<reason>"
  // when the result would trace (level not OFF) but cannot (rate 0 in
  // Triton mode, no trace file in Triton mode).
  Status Update(const std::string& model, const TraceSettingUpdate& update);

  // Requests sampled so far, and what the collector made of them (metrics).
  uint64_t sampled() const { return sampled_.load(std::memory_order_relaxed); }
  TraceCollectorStats collector_stats() const {
    return collector_ ? collector_->stats() : TraceCollectorStats{};
  }
  // Shutdown, once no request is in flight: the collector's Close.
  void Close() {
    if (collector_) collector_->Close();
  }

  const TraceConfig& config() const { return config_; }
  TraceMode mode() const { return config_.mode; }

 private:
  struct Specified {
    bool level = false, rate = false, count = false, log_frequency = false;
  };
  // One scope's settings and counters. Updated in place (Set, under
  // write_mu_) so that Sample reads the global scope without a lock: every
  // field is an atomic, and a sample that races an update may see a mix of
  // old and new values, which is harmless for one request's decision.
  struct Scope {
    std::atomic<uint32_t> level{kTraceLevelOff};
    std::atomic<uint32_t> rate{1000};
    std::atomic<uint32_t> log_frequency{0};
    std::atomic<bool> valid{false};  // level on and able to trace
    std::atomic<int64_t> count_left{-1};
    std::atomic<uint64_t> sample{0};
    Specified specified;  // which fields are the scope's own (write_mu_)
    void Set(const TraceSettingValues& v, const Specified& s, bool can_trace);
    TraceSettingValues Values() const;  // count: what is left
  };

  // Whether `v` can trace ("": yes), in this mode.
  std::string InvalidReason(const TraceSettingValues& v) const;
  // Rebuilds `model`'s scope from its own fields and the global ones.
  Status Rebuild(const std::string& model, const TraceSettingUpdate& update)
      INFERD_REQUIRES(write_mu_);
  void RefreshActive() INFERD_REQUIRES(write_mu_);

  const TraceConfig config_;
  const std::shared_ptr<TraceCollector> collector_;
  const TraceSettingValues defaults_;  // the command line's

  Mutex write_mu_;  // serialises updates
  // The model scopes: shared by Sample/Get, exclusive to add or remove one.
  mutable std::shared_mutex mu_;
  Scope global_;  // never replaced: Sample reads it without mu_
  std::map<std::string, std::unique_ptr<Scope>, std::less<>> models_;
  std::atomic<bool> has_models_{false};
  std::atomic<bool> active_{false};
  std::atomic<uint64_t> sampled_{0};
};

}  // namespace inferd::trace
