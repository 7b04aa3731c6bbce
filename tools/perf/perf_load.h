// infer-perf's load generators. Two engines behind one interface:
//  - the transport load: worker threads each sending one fixed request (a
//    pre-encoded HTTP body, a gRPC unary call or a stream) as fast as
//    allowed; the fastest path, and the only one for --streaming;
//  - the client load (perf_client_load.cc): libinferclient's Client, for what
//    varies per request or needs the asynchronous API: sequences (-a or
//    not), -a/--async, --grpc-compression-algorithm.
// Both run closed loop (a concurrency: that many requests outstanding) or
// open loop (a Schedule of send times: a rate, Poisson arrivals, or
// --request-intervals).
//
// Threading: Start and Stop are called by one (the measuring) thread;
// requests are recorded from worker or client callback threads into the
// Recorder, which is thread-safe. Errors: a failed request is recorded as
// not ok and the first error message is kept; a generator that cannot
// connect records that as its first error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "inferd/client/client.h"
#include "perf_options.h"
#include "perf_transport.h"

namespace inferd::perf {

using Clock = std::chrono::steady_clock;

struct Record {
  Clock::time_point end;
  uint64_t latency_us;
  bool ok;
};

class Recorder {
 public:
  void Add(const Record& r);
  std::vector<Record> Take();  // the records since the last Take
  size_t Count();              // how many Take would return now

 private:
  std::mutex mu_;
  std::vector<Record> records_;  // guarded by mu_
};

// Send times of an open-loop load from its start: gaps of 1/rate, Poisson
// gaps of mean 1/rate, or the --request-intervals gaps cyclically.
// Thread-safe.
class Schedule {
 public:
  Schedule(const Options& o, double rate, Clock::time_point start);
  Clock::time_point At(uint64_t i);  // the i-th request's send time

 private:
  std::mutex mu_;
  const Options& o_;
  double rate_;
  Clock::time_point start_;
  std::vector<Clock::time_point> times_;  // guarded by mu_
  double next_s_ = 0;                     // guarded by mu_
  size_t interval_ = 0;                   // next --request-intervals gap, guarded by mu_
  std::mt19937_64 rng_{7};
  std::exponential_distribution<double> exp_;
};

// The load at one level. Start begins sending; Stop ends it and returns once
// no request is outstanding.
class LoadGenerator {
 public:
  virtual ~LoadGenerator() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
  Recorder& recorder() { return recorder_; }
  std::string first_error();

 protected:
  void Fail(const std::string& e);
  Recorder recorder_;

 private:
  std::mutex err_mu_;
  std::string first_error_;  // guarded by err_mu_
};

// Sleeps until `t` or until `stop` is set (checked every 50 ms); false if
// stopped.
bool SleepUntil(Clock::time_point t, const std::atomic<bool>& stop);

// The transport load: `concurrency` workers (closed loop), or
// o.max_threads workers sending on a Schedule at `rate` (open loop, rate > 0).
std::unique_ptr<LoadGenerator> MakeTransportLoad(const Options& o, TransportFactory factory,
                                                 int concurrency, double rate);

// A libinferclient client for the load (-i, -u, --grpc-compression-algorithm),
// or nullptr with `error` (perf_client_load.cc).
std::unique_ptr<client::Client> NewPerfClient(const Options& o, std::string& error);

// The client load (perf_client_load.cc): sync (one thread and client per
// concurrent request, or o.max_threads on a Schedule) or async (AsyncInfer:
// over gRPC one client for every request; over HTTP one client per
// concurrent request, since an HttpClient runs its asynchronous requests one
// after another). With `sequence_model`, requests carry sequence ids and
// flags (perf_sequence.h): one sequence slot per concurrent request, or
// --num-of-sequences in rate mode; Stop ends the sequences still open.
// Throws std::invalid_argument when --sequence-id-range is too small.
std::unique_ptr<LoadGenerator> MakeClientLoad(const Options& o, const client::InferRequest& request,
                                              bool sequence_model, bool async, int concurrency,
                                              double rate);

}  // namespace inferd::perf
