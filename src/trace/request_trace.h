// RequestTrace: the trace of one sampled inference request as it happens —
// Triton's trace ids, the model it ran, and named steady-clock timestamps
// (HTTP_RECV_START, REQUEST_START, QUEUE_START, COMPUTE_START, ...), plus
// the tensors at level TENSORS. An ensemble's steps get child traces
// (parent_id = the ensemble's trace id).
//
// Lifetime and completion: a trace is shared by whoever may still stamp it
// — the front end (until its response is sent), the InferRequest (until the
// request is released), the server's final-signal decorator — and a child
// trace holds its parent. When the last holder lets go, the trace is
// complete: a child hands its record (and its own children's) to its
// parent; a root hands the whole group to its TraceCollector (the Triton
// trace file, or the OpenTelemetry span builder). So a root is collected
// once, after every child, on the thread that released it last.
//
// Cost: nothing exists for a request that is not sampled (the holders keep
// a null pointer). A sampled request pays one allocation for the trace and
// a short uncontended lock per timestamp.
//
// Threading: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_annotations.h"
#include "trace/trace_context.h"

namespace inferd::trace {

// Activity names (Triton's). Static storage: timestamps keep the pointer.
namespace activity {
inline constexpr const char* kHttpRecvStart = "HTTP_RECV_START";
inline constexpr const char* kHttpRecvEnd = "HTTP_RECV_END";
inline constexpr const char* kHttpSendStart = "HTTP_SEND_START";
inline constexpr const char* kHttpSendEnd = "HTTP_SEND_END";
inline constexpr const char* kGrpcWaitReadStart = "GRPC_WAITREAD_START";
inline constexpr const char* kGrpcWaitReadEnd = "GRPC_WAITREAD_END";
inline constexpr const char* kGrpcSendStart = "GRPC_SEND_START";
inline constexpr const char* kGrpcSendEnd = "GRPC_SEND_END";
inline constexpr const char* kRequestStart = "REQUEST_START";
inline constexpr const char* kQueueStart = "QUEUE_START";
inline constexpr const char* kComputeStart = "COMPUTE_START";
inline constexpr const char* kComputeInputEnd = "COMPUTE_INPUT_END";
inline constexpr const char* kComputeOutputStart = "COMPUTE_OUTPUT_START";
inline constexpr const char* kComputeEnd = "COMPUTE_END";
inline constexpr const char* kRequestEnd = "REQUEST_END";
inline constexpr const char* kTensorQueueInput = "TENSOR_QUEUE_INPUT";
inline constexpr const char* kTensorBackendInput = "TENSOR_BACKEND_INPUT";
inline constexpr const char* kTensorBackendOutput = "TENSOR_BACKEND_OUTPUT";
}  // namespace activity

// A front end's activity (HTTP_* / GRPC_*): the root span's events in
// OpenTelemetry mode.
bool IsFrontendActivity(const char* name);

struct TraceTimestamp {
  const char* name;  // static storage (activity::)
  uint64_t ns;       // steady clock
};

// One tensor at level TENSORS, already formatted as the trace file wants it.
struct TraceTensor {
  const char* activity;  // kTensorQueueInput, kTensorBackendInput, kTensorBackendOutput
  std::string name;
  std::string datatype;  // "FP32", ...
  std::string shape;     // "1,16"
  std::string data;      // "v1,v2,..."
};

// What a finished trace is: plain data.
struct TraceRecord {
  uint64_t id = 0;
  uint64_t parent_id = 0;  // 0: a root
  uint32_t level = 0;      // TraceLevelBits in force when sampled
  uint32_t log_frequency = 0;
  std::string model_name;
  int64_t model_version = -1;
  std::string request_id;
  bool started = false;  // REQUEST_START was stamped (the request reached a model)
  std::vector<TraceTimestamp> timestamps;
  std::vector<TraceTensor> tensors;
};

// A root trace and every trace spawned under it (children in the order
// they completed, grandchildren included), plus the context the request
// came with (OpenTelemetry mode).
struct TraceGroup {
  TraceRecord root;
  std::vector<TraceRecord> children;
  std::optional<TraceContext> propagated;
};

// Where complete groups go. Collect may be called from any thread,
// concurrently, and should not block for long (it runs on a request's
// thread).
// What a collector has done so far (metrics; monotonic counts).
struct TraceCollectorStats {
  uint64_t traces = 0;           // groups written (file) or turned into spans
  uint64_t spans_exported = 0;   // OpenTelemetry: accepted by the collector
  uint64_t spans_dropped = 0;    // OpenTelemetry: lost (queue full, refused, failed)
  uint64_t export_failures = 0;  // OpenTelemetry: batches given up
};

class TraceCollector {
 public:
  virtual ~TraceCollector() = default;
  virtual void Collect(TraceGroup group) = 0;
  virtual TraceCollectorStats stats() const { return {}; }
  // Shutdown, after the last request: ends files, sends queued spans
  // (bounded). Idempotent.
  virtual void Close() {}
};

uint64_t SteadyNowNs();

// Trace ids, as Triton numbers them: 1, 2, 3, ... in this process, for
// roots and children alike.
uint64_t NextTraceId();
inline uint64_t SteadyNs(std::chrono::steady_clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

class RequestTrace {
 public:
  // A root trace (Tracer::Sample makes them).
  RequestTrace(uint64_t id, uint32_t level, uint32_t log_frequency, std::string model_name,
               std::shared_ptr<TraceCollector> collector, std::optional<TraceContext> propagated);
  // A child of `parent` (Child()).
  RequestTrace(uint64_t id, std::shared_ptr<RequestTrace> parent, std::string model_name);
  ~RequestTrace();
  RequestTrace(const RequestTrace&) = delete;
  RequestTrace& operator=(const RequestTrace&) = delete;

  uint64_t id() const { return id_; }
  bool tensors() const { return (level_ & 2u) != 0; }  // kTraceLevelTensors

  void Stamp(const char* name) { Stamp(name, SteadyNowNs()); }
  void Stamp(const char* name, std::chrono::steady_clock::time_point t) {
    Stamp(name, SteadyNs(t));
  }
  void Stamp(const char* name, uint64_t steady_ns);
  // REQUEST_START: the version the request runs on and its id.
  void Start(const std::string& model_name, int64_t model_version, const std::string& request_id);
  void AddTensor(TraceTensor tensor);

  // A trace for a request this one spawns (an ensemble step), sharing this
  // trace's level, with the next trace id.
  static std::shared_ptr<RequestTrace> Child(const std::shared_ptr<RequestTrace>& parent,
                                             std::string model_name);

  // A snapshot of the record so far (tests).
  TraceRecord Snapshot() const;

 private:
  void Adopt(std::vector<TraceRecord> records);

  const uint64_t id_;
  const uint32_t level_;
  const std::shared_ptr<RequestTrace> parent_;       // null for a root
  const std::shared_ptr<TraceCollector> collector_;  // null for a child
  mutable Mutex mu_;
  TraceRecord record_ INFERD_GUARDED_BY(mu_);
  std::vector<TraceRecord> children_ INFERD_GUARDED_BY(mu_);
  std::optional<TraceContext> propagated_;
};

}  // namespace inferd::trace
