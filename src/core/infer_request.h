// InferRequest / InferResponse: the one request model every front end
// decodes into and encodes from.
//
// Ownership: an InferRequest owns (or keeps alive through `holders`) every
// byte its input views point at, so a request may travel between threads
// and outlive the connection it came from. Binary request bodies are kept
// alive as a holder and referenced, not copied.
//
// Threading: a request is used by one thread at a time (front end, then the
// scheduler, then one instance thread); it is not internally synchronised.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/datatype.h"
#include "core/parameters.h"
#include "core/shape.h"
#include "core/status.h"
#include "core/tensor.h"

namespace inferd {

namespace trace {
class RequestTrace;  // trace/request_trace.h
}

struct InferInput {
  std::string name;
  DataType datatype = DataType::kInvalid;
  Shape shape;
  BufferView data;
};

struct RequestedOutput {
  std::string name;
  uint32_t classification = 0;  // top-k class strings when > 0
};

// A correlation id: none, an unsigned integer, or a string.
using CorrelationId = std::variant<std::monostate, uint64_t, std::string>;

class InferRequest {
 public:
  std::string model_name;
  int64_t model_version = -1;  // -1: latest ready version
  std::string id;
  Parameters parameters;  // as decoded; ValidateRequest moves the reserved keys out
  std::vector<InferInput> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every model output

  // Scheduling (schedule_policy and sequence extensions).
  uint64_t priority = 0;    // 0 = model default
  uint64_t timeout_us = 0;  // 0 = queue policy default
  CorrelationId correlation_id;
  bool sequence_start = false;
  bool sequence_end = false;
  // triton_enable_empty_final_response: a stream's last response may be an
  // empty one flagged final (decoupled models).
  bool enable_empty_final_response = false;
  // Set by front ends that take exactly one response (unary gRPC, HTTP
  // /infer): a decoupled model is refused before scheduling with
  // UNIMPLEMENTED and this text (each protocol has its own). Static
  // storage.
  const char* decoupled_refusal = nullptr;

  // Filled by validation.
  int64_t batch_size = 0;  // 0 for models without batching

  // Set by the front end when the client has gone away (disconnect, gRPC
  // cancel or deadline). Schedulers drop a cancelled request that is still
  // queued; one already executing runs to the end.
  std::shared_ptr<std::atomic<bool>> cancel_flag;
  bool IsCancelled() const { return cancel_flag && cancel_flag->load(std::memory_order_relaxed); }

  // The request's trace when it was sampled (trace/tracer.h), else null:
  // whoever handles the request stamps it (REQUEST_START, QUEUE_START,
  // COMPUTE_*); the request holds it until released.
  std::shared_ptr<trace::RequestTrace> trace;

  // Keeps `bytes` alive for as long as the request lives; input views may
  // point into it.
  void Hold(std::shared_ptr<const void> bytes) { holders_.push_back(std::move(bytes)); }

  // Allocates request-owned storage (for inputs decoded from JSON or typed
  // protobuf contents). The pointer stays valid for the request's lifetime.
  char* Allocate(size_t size) { return owned_.emplace_back(size).data(); }

  const InferInput* FindInput(std::string_view name) const;

 private:
  std::vector<std::shared_ptr<const void>> holders_;
  std::deque<OwnedBuffer> owned_;
};

struct InferOutput {
  std::string name;
  DataType datatype = DataType::kInvalid;
  Shape shape;
  OwnedBuffer buffer;
};

class InferResponse {
 public:
  std::string model_name;
  int64_t model_version = 0;
  std::string id;
  Parameters parameters;
  std::vector<InferOutput> outputs;

  // Adds an output of `byte_size` uninitialised bytes and returns it; the
  // caller writes the whole buffer.
  InferOutput& AddOutput(std::string name, DataType datatype, Shape shape, size_t byte_size);
  const InferOutput* FindOutput(std::string_view name) const;
};

}  // namespace inferd
