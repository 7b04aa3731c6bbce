#include "perf_load.h"

#include <atomic>
#include <thread>

namespace inferd::perf {

void Recorder::Add(const Record& r) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(r);
}

std::vector<Record> Recorder::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Record> out;
  out.swap(records_);
  return out;
}

size_t Recorder::Count() {
  std::lock_guard<std::mutex> lock(mu_);
  return records_.size();
}

Schedule::Schedule(const Options& o, double rate, Clock::time_point start)
    : o_(o), rate_(rate), start_(start), exp_(rate > 0 ? rate : 1.0) {}

Clock::time_point Schedule::At(uint64_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  while (times_.size() <= i) {
    double gap;
    if (!o_.intervals_us.empty()) {
      gap = double(o_.intervals_us[interval_]) / 1e6;
      interval_ = (interval_ + 1) % o_.intervals_us.size();
    } else {
      gap = o_.poisson ? exp_(rng_) : 1.0 / rate_;
    }
    // The first request goes at once; each gap separates it from the next.
    times_.push_back(start_ + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(next_s_)));
    next_s_ += gap;
  }
  return times_[i];
}

std::string LoadGenerator::first_error() {
  std::lock_guard<std::mutex> lock(err_mu_);
  return first_error_;
}

void LoadGenerator::Fail(const std::string& e) {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (first_error_.empty()) first_error_ = e;
}

bool SleepUntil(Clock::time_point t, const std::atomic<bool>& stop) {
  while (!stop && Clock::now() < t) {
    std::this_thread::sleep_until(std::min(t, Clock::now() + std::chrono::milliseconds(50)));
  }
  return !stop;
}

namespace {

class TransportLoad : public LoadGenerator {
 public:
  TransportLoad(const Options& o, TransportFactory factory, int concurrency, double rate)
      : o_(o), factory_(std::move(factory)), concurrency_(concurrency), rate_(rate) {}

  void Start() override {
    schedule_ = std::make_unique<Schedule>(o_, rate_, Clock::now());
    const int workers = rate_ > 0 ? o_.max_threads : concurrency_;
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Worker(); });
  }
  void Stop() override {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  void Worker() {
    std::string error;
    std::unique_ptr<Transport> t = factory_(error);
    if (!t) {
      Fail(error);
      return;
    }
    while (!stop_) {
      Clock::time_point begin = Clock::now();
      if (rate_ > 0) {
        begin = schedule_->At(next_.fetch_add(1));
        if (!SleepUntil(begin, stop_)) break;
      }
      const bool ok = t->Infer(error);
      const auto end = Clock::now();
      if (!ok) Fail(error);
      recorder_.Add(
          Record{end,
                 static_cast<uint64_t>(
                     std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count()),
                 ok});
    }
  }

  const Options& o_;
  TransportFactory factory_;
  int concurrency_;
  double rate_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> next_{0};
  std::unique_ptr<Schedule> schedule_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<LoadGenerator> MakeTransportLoad(const Options& o, TransportFactory factory,
                                                 int concurrency, double rate) {
  return std::make_unique<TransportLoad>(o, std::move(factory), concurrency, rate);
}

}  // namespace inferd::perf
