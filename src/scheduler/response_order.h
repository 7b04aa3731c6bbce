// ResponseOrder: the reorder buffer behind `preserve_ordering`. Requests are
// numbered as they arrive (Wrap); whatever order the instances finish them
// in, each request's responses and final signal reach its own sink only
// after every earlier request's final signal. An error, a rejection, a
// cancellation or a timeout is a final signal like any other and keeps its
// place. Non-final responses of the request at the head pass straight
// through; those of a later request wait with it.
//
// Ownership: Wrap takes the request's sink and returns a sink (for the
// scheduler to own) that records into this buffer; the buffer holds the
// real sink until its final signal is delivered, then destroys it. The
// buffer is shared by the returned sinks, so it lives as long as any of
// them. A returned sink destroyed without a final signal (a producer bug)
// finishes its request with INTERNAL rather than block every later one.
//
// Threading: Wrap is called in arrival order (the scheduler calls it under
// its queue lock); the returned sinks from any thread (the sink contract
// holds per request). Real sinks are called outside this buffer's lock, one
// thread at a time: the thread that finds the buffer idle delivers all that
// is deliverable, including what other threads record meanwhile. So a sink
// may enqueue a new request on the same model (an ensemble's next step)
// without deadlocking; that request then waits its turn like any other.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/response_sink.h"
#include "core/thread_annotations.h"

namespace inferd {

class ResponseOrder : public std::enable_shared_from_this<ResponseOrder> {
 public:
  // Create with std::make_shared (the returned sinks share the buffer).
  std::unique_ptr<InferResponseSink> Wrap(std::unique_ptr<InferResponseSink> sink)
      INFERD_EXCLUDES(mu_);

  // Requests wrapped and not yet delivered in full (for tests).
  size_t held() const INFERD_EXCLUDES(mu_);

 private:
  class OrderedSink;
  struct Entry {
    std::unique_ptr<InferResponseSink> sink;
    std::vector<std::unique_ptr<InferResponse>> partial;  // non-final, not yet delivered
    bool done = false;                                    // the final signal arrived
    std::unique_ptr<InferResponse> last;                  // with it, if any
    Status status;                                        // else Finish(status)
  };

  // Records one signal of request `seq` and delivers what became
  // deliverable (unless another thread is delivering: it will).
  void Record(uint64_t seq, std::unique_ptr<InferResponse> response, bool final, Status status)
      INFERD_EXCLUDES(mu_);

  mutable Mutex mu_;
  std::deque<Entry> entries_ INFERD_GUARDED_BY(mu_);  // entries_[i] is request base_ + i
  uint64_t base_ INFERD_GUARDED_BY(mu_) = 0;          // the head's number
  bool delivering_ INFERD_GUARDED_BY(mu_) = false;
};

}  // namespace inferd
