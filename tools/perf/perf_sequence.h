// infer-perf's sequences for models with sequence_batching: a fixed set of
// sequence slots (one per concurrent request in concurrency mode,
// --num-of-sequences in rate mode), each running one sequence after another.
// A sequence has --sequence-length requests ± --sequence-length-variation
// percent; its first request carries sequence_start, its last
// sequence_end. Ids come from --sequence-id-range: unbounded ids count up;
// a bounded range hands out ids not in use (a sequence's id goes back to the
// end of the queue once its END request completed), so two live sequences never share one.
//
// Threading: every method is thread-safe. Errors: the constructor throws
// std::invalid_argument when a bounded range holds fewer ids than slots.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "inferd/client/tensor.h"
#include "perf_options.h"

namespace inferd::perf {

class Sequences {
 public:
  Sequences(const Options& o, size_t slots);

  size_t slots() const { return slots_.size(); }
  // Sets the sequence fields of the next request of slot `k` (starting a new
  // sequence there when the last one ended) and marks the slot in flight.
  void Next(size_t k, client::InferRequest& r);
  // The request of slot `k` completed.
  void Done(size_t k);
  // A slot with no request in flight, starting the search after the last
  // one returned (round robin); nullopt when all are in flight.
  std::optional<size_t> FreeSlot();
  // Ends the sequences still open: their ids (each slot's open sequence is
  // forgotten), for requests with sequence_end.
  std::vector<uint64_t> TakeOpen();
  uint64_t started();  // sequences started so far

 private:
  struct Slot {
    uint64_t id = 0;
    int remaining = 0;  // requests left in the current sequence; 0: none open
    bool in_flight = false;
    uint64_t ending_id = 0;  // bounded range: the ended id to free when its END completes
  };
  uint64_t NewId(Slot& s);  // with mu_ held
  int NewLength();          // with mu_ held

  std::mutex mu_;
  const Options& o_;
  std::vector<Slot> slots_;    // guarded by mu_
  std::deque<uint64_t> free_;  // bounded range: ids not in use, guarded by mu_
  uint64_t next_id_;           // unbounded range: the next id, guarded by mu_
  size_t cursor_ = 0;          // FreeSlot's round robin, guarded by mu_
  uint64_t started_ = 0;       // guarded by mu_
  std::mt19937 rng_{11};       // guarded by mu_
};

}  // namespace inferd::perf
