// OtlpExporter: the SpanExporter that sends spans to an OpenTelemetry
// collector over OTLP/HTTP (binary protobuf, POST <url>, PROTOCOL-NEXT
// §6.1) as a batch span processor does: spans wait in a bounded queue and
// one worker thread sends them in batches of at most max_export_batch_size,
// when a batch is full or schedule_delay after the last send.
//
// Never in the way of requests: Export only appends to the queue under a
// short lock, and when the queue is full the spans are dropped and counted.
// A slow, hanging or failing collector costs the worker's time only.
//
// Failures: 429, 502, 503, 504 and failed connections are retried
// (options' back-off with jitter, Retry-After honoured) up to max_attempts;
// any other status, exhausted retries, and spans a collector rejects
// (partial_success.rejected_spans) are dropped and counted, never retried.
// Spans with an all-zero trace or span id, or no name, are dropped at Export.
//
// Ownership: owns its worker thread and transport. Threading: every method
// may be called from any thread. Shutdown (also the destructor) sends what
// is queued, bounded by export_timeout (failures are not retried then);
// what is left is dropped; Export after Shutdown drops.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "core/thread_annotations.h"
#include "trace/otlp_encode.h"
#include "trace/otlp_options.h"
#include "trace/otlp_transport.h"
#include "trace/span_exporter.h"

namespace inferd::trace {

struct OtlpExporterStats {
  uint64_t exported_spans = 0;   // accepted by the collector
  uint64_t dropped_spans = 0;    // every loss: queue full, refused, rejected, invalid, shutdown
  uint64_t rejected_spans = 0;   // of dropped: the collector's partial_success
  uint64_t failed_exports = 0;   // batches given up (non-retryable answer or retries exhausted)
  uint64_t export_requests = 0;  // POSTs made, retries included
  uint64_t queued_spans = 0;     // waiting now
};

// What to do with one POST's outcome (a pure rule, unit-tested).
enum class ExportOutcome { kSuccess, kRetry, kFail };
ExportOutcome ClassifyPost(const PostResult& result);

// The wait before attempt `attempt + 1` (attempt >= 1): the server's
// Retry-After when given (capped), else initial * 2^(attempt-1) capped at
// max, uniformly jittered over its upper half.
std::chrono::milliseconds RetryDelay(const OtlpExporterOptions& options, int attempt,
                                     const std::optional<std::chrono::milliseconds>& retry_after,
                                     std::mt19937_64& random);

class OtlpExporter : public SpanExporter {
 public:
  // Over libcurl to options.url.
  explicit OtlpExporter(const OtlpExporterOptions& options);
  // Over `transport` (tests).
  OtlpExporter(OtlpExporterOptions options, std::unique_ptr<OtlpTransport> transport);
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  void Export(std::vector<Span> spans) override;
  uint64_t dropped() const override { return dropped_.load(std::memory_order_relaxed); }
  // Sends everything queued now; returns when it is sent (or given up) or
  // after export_timeout, whichever is first.
  void Flush() override;
  // Flush, bounded by export_timeout, then stop the worker. Idempotent.
  void Shutdown();

  uint64_t exported() const { return exported_.load(std::memory_order_relaxed); }
  uint64_t failed_exports() const { return failed_exports_.load(std::memory_order_relaxed); }
  OtlpExporterStats stats() const;
  const OtlpExporterOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;

  void Run();
  // One batch to the collector, with retries; counts the outcome.
  void Send(const std::vector<Span>& batch);
  // The timeout for the next POST; zero when shutting down past the deadline.
  std::chrono::milliseconds PostTimeout();
  // Waits `delay` unless Shutdown begins; false if it did.
  bool Backoff(std::chrono::milliseconds delay);
  void Drop(uint64_t n) { dropped_.fetch_add(n, std::memory_order_relaxed); }

  const OtlpExporterOptions options_;
  const OtlpEnvelope envelope_;
  std::unique_ptr<OtlpTransport> transport_;
  std::mt19937_64 random_;  // the worker's: jitter

  mutable Mutex mu_;
  CondVar wake_;     // the worker: a full batch, a flush, shutdown
  CondVar flushed_;  // Flush callers
  std::deque<Span> queue_ INFERD_GUARDED_BY(mu_);
  uint64_t flush_requested_ INFERD_GUARDED_BY(mu_) = 0;
  uint64_t flush_done_ INFERD_GUARDED_BY(mu_) = 0;
  bool stopping_ INFERD_GUARDED_BY(mu_) = false;
  Clock::time_point stop_deadline_ INFERD_GUARDED_BY(mu_);
  bool failing_ = false;  // the worker's: the last batch failed (logs once per outage)

  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> failed_exports_{0};
  std::atomic<uint64_t> requests_{0};

  std::once_flag joined_;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace inferd::trace
