// The client load: libinferclient's Client, sync or async, with sequences.
#include <condition_variable>
#include <thread>

#include "inferd/client/grpc_client.h"
#include "inferd/client/http_client.h"
#include "perf_load.h"
#include "perf_sequence.h"

namespace inferd::perf {

std::unique_ptr<client::Client> NewPerfClient(const Options& o, std::string& error) {
#ifdef INFERD_PERF_WITH_GRPC
  if (o.protocol == "grpc") {
    auto c = std::make_unique<client::GrpcClient>(o.url, o.connection.For(o.protocol));
    if (const client::ClientStatus setup = c->SetupStatus(); !setup.ok) {
      error = setup.message;
      return nullptr;
    }
    if (!c->SetCompression(o.grpc_compression)) {
      error = "unknown gRPC compression '" + o.grpc_compression + "'";
      return nullptr;
    }
    return c;
  }
#endif
  return client::MakeClient(o.protocol, o.url, o.connection.For(o.protocol), error);
}

namespace {

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

class ClientLoad : public LoadGenerator {
 public:
  ClientLoad(const Options& o, const client::InferRequest& request, bool sequence_model, bool async,
             int concurrency, double rate)
      : o_(o), request_(request), async_(async), concurrency_(concurrency), rate_(rate) {
    const size_t slots = rate > 0 ? size_t(o.num_sequences) : size_t(concurrency);
    if (sequence_model) sequences_ = std::make_unique<Sequences>(o, slots);
  }

  void Start() override {
    schedule_ = std::make_unique<Schedule>(o_, rate_, Clock::now());
    if (async_) {
      StartAsync();
    } else {
      const int workers = rate_ > 0 ? o_.max_threads : concurrency_;
      for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { SyncWorker(i); });
    }
  }

  void Stop() override {
    stop_ = true;
    for (auto& t : threads_) t.join();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return in_flight_ == 0; });
    }
    clients_.clear();
    EndOpenSequences();
  }

 private:
  // Which sequence slot the i-th open-loop request goes to: round robin, or
  // with --serial-sequences the next slot with nothing in flight (waiting
  // for one). nullopt when stopped while waiting.
  std::optional<size_t> PickSlot(uint64_t i) {
    if (!o_.serial_sequences) return i % sequences_->slots();
    for (;;) {
      if (auto k = sequences_->FreeSlot()) return k;
      if (stop_) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  void Complete(Clock::time_point begin, const client::ClientStatus& st,
                const client::InferResult& r, std::optional<size_t> slot) {
    const auto end = Clock::now();
    const bool ok = st.ok && r.ok();
    if (!ok) Fail(!st.ok ? st.message : "status " + std::to_string(r.status) + ": " + r.error);
    if (slot && sequences_) sequences_->Done(*slot);
    recorder_.Add(Record{end, Micros(end - begin), ok});
  }

  // One blocking client per thread: slot i in closed loop, or requests from
  // the schedule in open loop.
  void SyncWorker(int i) {
    std::string error;
    std::unique_ptr<client::Client> c = NewPerfClient(o_, error);
    if (!c) {
      Fail(error);
      return;
    }
    client::InferRequest req = request_;
    client::InferResult result;
    while (!stop_) {
      Clock::time_point begin = Clock::now();
      std::optional<size_t> slot;
      if (rate_ > 0) {
        const uint64_t n = next_.fetch_add(1);
        begin = schedule_->At(n);
        if (!SleepUntil(begin, stop_)) break;
        if (sequences_ && !(slot = PickSlot(n))) break;
      } else {
        slot = size_t(i);
      }
      if (sequences_) sequences_->Next(*slot, req);
      client::ClientStatus st = c->Infer(req, result);
      Complete(begin, st, result, slot);
    }
  }

  void StartAsync() {
    // gRPC multiplexes every request on one channel; an HttpClient sends its
    // asynchronous requests one after another, so HTTP needs one a slot.
    size_t clients = o_.protocol == "grpc" ? 1 : size_t(rate_ > 0 ? o_.max_threads : concurrency_);
    for (size_t i = 0; i < clients; ++i) {
      std::string error;
      auto c = NewPerfClient(o_, error);
      if (!c) {
        Fail(error);
        return;
      }
      clients_.push_back(std::move(c));
    }
    if (rate_ > 0) {
      threads_.emplace_back([this] { AsyncScheduler(); });
      return;
    }
    slot_requests_.assign(size_t(concurrency_), request_);
    for (int k = 0; k < concurrency_; ++k) Issue(size_t(k));
  }

  // Closed loop: slot k's next request, sent from its previous one's
  // completion (one request in flight per slot, so slot_requests_[k] is
  // free: the clients copy a request before AsyncInfer returns).
  void Issue(size_t k) {
    client::InferRequest& req = slot_requests_[k];
    if (sequences_) sequences_->Next(k, req);
    Begin();
    const auto begin = Clock::now();
    clients_[k % clients_.size()]->AsyncInfer(
        req, [this, k, begin](const client::ClientStatus& st, const client::InferResult& r) {
          Complete(begin, st, r, k);
          if (!stop_) Issue(k);
          End();
        });
  }

  void AsyncScheduler() {
    client::InferRequest req = request_;
    for (uint64_t n = 0; !stop_; ++n) {
      const auto begin = schedule_->At(n);
      if (!SleepUntil(begin, stop_)) break;
      std::optional<size_t> slot;
      if (sequences_) {
        if (!(slot = PickSlot(n))) break;
        sequences_->Next(*slot, req);
      }
      Begin();
      clients_[n % clients_.size()]->AsyncInfer(
          req, [this, begin, slot](const client::ClientStatus& st, const client::InferResult& r) {
            Complete(begin, st, r, slot);
            End();
          });
    }
  }

  void Begin() {
    std::lock_guard<std::mutex> lock(mu_);
    ++in_flight_;
  }
  void End() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--in_flight_ == 0) cv_.notify_all();
  }

  // A sequence left open would hold its slot in the server's sequence
  // batcher until its idle timeout: end each with one more request.
  void EndOpenSequences() {
    if (!sequences_) return;
    std::string error;
    auto c = NewPerfClient(o_, error);
    if (!c) return;
    for (uint64_t id : sequences_->TakeOpen()) {
      client::InferRequest req = request_;
      req.sequence_id = id;
      req.sequence_end = true;
      client::InferResult r;
      client::ClientStatus st = c->Infer(req, r);
      if (!st.ok || !r.ok())
        Fail("ending sequence " + std::to_string(id) + ": " + (st.ok ? r.error : st.message));
    }
  }

  const Options& o_;
  const client::InferRequest request_;
  const bool async_;
  const int concurrency_;
  const double rate_;
  std::unique_ptr<Sequences> sequences_;
  std::unique_ptr<Schedule> schedule_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> next_{0};
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<client::Client>> clients_;  // async: used from callbacks
  std::vector<client::InferRequest> slot_requests_;       // async closed loop, one per slot
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;  // async requests not completed, guarded by mu_
};

}  // namespace

std::unique_ptr<LoadGenerator> MakeClientLoad(const Options& o, const client::InferRequest& request,
                                              bool sequence_model, bool async, int concurrency,
                                              double rate) {
  return std::make_unique<ClientLoad>(o, request, sequence_model, async, concurrency, rate);
}

}  // namespace inferd::perf
