#include "perf_sequence.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace inferd::perf {

Sequences::Sequences(const Options& o, size_t slots)
    : o_(o), slots_(slots), next_id_(o.sequence_id_start) {
  if (o.sequence_id_end != 0) {
    const uint64_t ids = o.sequence_id_end - o.sequence_id_start;
    if (ids < slots) {
      throw std::invalid_argument("--sequence-id-range " + std::to_string(o.sequence_id_start) +
                                  ":" + std::to_string(o.sequence_id_end) + " holds " +
                                  std::to_string(ids) + " ids, fewer than the " +
                                  std::to_string(slots) +
                                  " concurrent sequences (two sequences would share an id)");
    }
    for (uint64_t id = o.sequence_id_start; id < o.sequence_id_end; ++id) free_.push_back(id);
  }
}

uint64_t Sequences::NewId(Slot& s) {
  if (o_.sequence_id_end == 0) return next_id_++;
  if (free_.empty()) {
    // Only without --serial-sequences in rate mode, where a slot may start
    // its next sequence before its last request completed: reuse the id the
    // slot is ending (the server sees the END first on one gRPC channel).
    const uint64_t id = s.ending_id;
    s.ending_id = 0;
    return id;
  }
  const uint64_t id = free_.front();
  free_.pop_front();
  return id;
}

int Sequences::NewLength() {
  const double spread = o_.sequence_length * o_.sequence_variation / 100;
  std::uniform_real_distribution<double> d(o_.sequence_length - spread,
                                           o_.sequence_length + spread);
  return std::max(1, int(std::lround(d(rng_))));
}

void Sequences::Next(size_t k, client::InferRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[k];
  r.sequence_start = s.remaining == 0;
  if (r.sequence_start) {
    s.id = NewId(s);
    s.remaining = NewLength();
    ++started_;
  }
  r.sequence_id = s.id;
  r.sequence_end = --s.remaining == 0;
  // A bounded range's id is free again once the END completed: a START of
  // the same id sent earlier from another slot could overtake it.
  if (r.sequence_end && o_.sequence_id_end != 0) s.ending_id = s.id;
  s.in_flight = true;
}

void Sequences::Done(size_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[k];
  s.in_flight = false;
  if (s.ending_id != 0) free_.push_back(s.ending_id);
  s.ending_id = 0;
}

std::optional<size_t> Sequences::FreeSlot() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    const size_t k = (cursor_ + i) % slots_.size();
    if (!slots_[k].in_flight) {
      cursor_ = (k + 1) % slots_.size();
      return k;
    }
  }
  return std::nullopt;
}

std::vector<uint64_t> Sequences::TakeOpen() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> open;
  for (auto& s : slots_) {
    if (s.remaining > 0) {
      open.push_back(s.id);
      if (o_.sequence_id_end != 0) free_.push_back(s.id);
      s.remaining = 0;
    }
  }
  return open;
}

uint64_t Sequences::started() {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

}  // namespace inferd::perf
