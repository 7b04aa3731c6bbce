// The Triton trace file (mode `triton`; PROTOCOL-NEXT §6.5): one JSON array
// of objects; per trace, a header object
//   {"id":N,"model_name":"m","model_version":V[,"request_id":"r"][,"parent_id":P]}
// then one object per timestamp, in steady-clock order,
//   {"id":N,"timestamps":[{"name":"REQUEST_START","ns":T}]}
// and at level TENSORS one object per tensor
//   {"id":N,"activity":"TENSOR_QUEUE_INPUT","tensor":{"name":..,"data":..,"shape":..,"dtype":..}}.
// A trace's objects are contiguous; a root is followed by its children
// (ensemble steps, with parent_id). Unlike Triton, whose header comes where
// REQUEST_START arrived, the header always comes first.
//
// Writing (TraceFileWriter), by the log_frequency in force for the trace:
//  * 0: appended to `file` as traces complete, each flushed to the kernel
//    at once; the closing `]` is written at shutdown (Close). So a crash
//    loses no completed trace, and leaves a file that lacks only the `]`.
//  * N > 0: traces are kept in memory until N have completed, then written
//    as `file.<i>` (i = 0, 1, ...), each a complete JSON array; at shutdown
//    the rest go to the next index.
// A trace that never reached a model (an unknown model, a request refused
// before REQUEST_START) is not written.
//
// Threading: Collect and Close may be called from any thread (a mutex
// orders the writes). Errors: a file that cannot be written is logged once
// per path; tracing goes on.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/datatype.h"
#include "core/infer_request.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/thread_annotations.h"
#include "trace/request_trace.h"

namespace inferd::trace {

// The objects of one trace, comma-separated (no brackets); "" when the
// trace never started.
std::string EncodeTraceRecord(const TraceRecord& record);
// A group's traces: the root's objects, then each child's.
std::string EncodeTraceGroup(const TraceGroup& group);

// A tensor as the trace file shows it: the values comma-separated (BYTES
// elements as their text, booleans 0/1), the shape "1,16".
TraceTensor MakeTraceTensor(const char* activity, const std::string& name, DataType datatype,
                            const Shape& shape, const BufferView& data);

// Level TENSORS: a request's inputs (TENSOR_QUEUE_INPUT,
// TENSOR_BACKEND_INPUT) or a response's outputs (TENSOR_BACKEND_OUTPUT)
// added to `trace`. Call only when trace.tensors().
void TraceInputs(RequestTrace& trace, const char* activity, const InferRequest& request);
void TraceOutputs(RequestTrace& trace, const InferResponse& response);

class TraceFileWriter : public TraceCollector {
 public:
  explicit TraceFileWriter(std::string path);
  ~TraceFileWriter() override;  // Close()

  void Collect(TraceGroup group) override;
  // Ends the files: the `]` of `file`, the last `file.<i>`. Idempotent.
  void Close() override;
  TraceCollectorStats stats() const override;

  uint64_t traces_written() const;

 private:
  void AppendToMain(const std::string& objects) INFERD_REQUIRES(mu_);
  void WriteIndexed() INFERD_REQUIRES(mu_);
  void Failed(const std::string& path) INFERD_REQUIRES(mu_);

  const std::string path_;
  mutable Mutex mu_;
  std::FILE* main_ INFERD_GUARDED_BY(mu_) = nullptr;  // opened at the first trace
  bool main_failed_ INFERD_GUARDED_BY(mu_) = false;
  bool closed_ INFERD_GUARDED_BY(mu_) = false;
  std::string pending_ INFERD_GUARDED_BY(mu_);  // log_frequency > 0: objects not yet written
  uint64_t pending_traces_ INFERD_GUARDED_BY(mu_) = 0;
  uint64_t next_index_ INFERD_GUARDED_BY(mu_) = 0;
  uint64_t written_ INFERD_GUARDED_BY(mu_) = 0;
  bool warned_ INFERD_GUARDED_BY(mu_) = false;
};

}  // namespace inferd::trace
