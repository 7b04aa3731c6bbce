// SpanExporter: where finished spans go. The OTLP/HTTP exporter
// (otlp_exporter.h) is the one implementation shipped; tests may pass their
// own.
//
// Threading: Export may be called from any thread, concurrently, and never
// blocks on the network: an exporter queues (bounded) and sends from its own
// thread, dropping (and counting) spans when its queue is full.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/span.h"

namespace inferd::trace {

class SpanExporter {
 public:
  virtual ~SpanExporter() = default;
  virtual void Export(std::vector<Span> spans) = 0;
  // Spans dropped so far (queue full, collector refused them for good, or
  // invalid ids). Monotonic.
  virtual uint64_t dropped() const = 0;
  // Sends what is queued, waiting at most the exporter's timeout; called
  // at shutdown.
  virtual void Flush() = 0;
};

}  // namespace inferd::trace
