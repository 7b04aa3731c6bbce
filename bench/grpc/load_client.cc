// bench_grpc_load: closed-loop unary ModelInfer load at a fixed concurrency.
//
// Keeps `--concurrency` calls outstanding on one channel (gRPC's callback
// stub: each completion starts the next call), discards a warm-up, then
// counts the calls that complete in the measurement window. The request is
// `simple`'s: two INT32 [1,16] inputs in raw_input_contents.
//
// Usage: bench_grpc_load --target HOST:PORT [--concurrency N] [--seconds S]
//                        [--warmup S] [--model NAME]
// Prints one JSON object: concurrency, requests, seconds, throughput
// (calls/s), p50_us, p99_us, errors.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;
  int concurrency = 1;
  double seconds = 5;
  double warmup = 1;
  std::string model = "simple";
};

inference::ModelInferRequest MakeRequest(const std::string& model) {
  inference::ModelInferRequest r;
  r.set_model_name(model);
  for (const char* name : {"INPUT0", "INPUT1"}) {
    auto* t = r.add_inputs();
    t->set_name(name);
    t->set_datatype("INT32");
    t->add_shape(1);
    t->add_shape(16);
    std::string data(64, '\0');
    for (int i = 0; i < 16; ++i) std::memcpy(&data[i * 4], &i, 4);
    r.add_raw_input_contents(data);
  }
  return r;
}

class Load {
 public:
  Load(const Options& o, std::shared_ptr<grpc::Channel> channel)
      : options_(o), stub_(inference::GRPCInferenceService::NewStub(channel)) {}

  void Run() {
    const auto start = Clock::now();
    measure_from_ = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options_.warmup));
    measure_to_ = measure_from_ + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.seconds));
    workers_.reserve(static_cast<size_t>(options_.concurrency));
    for (int i = 0; i < options_.concurrency; ++i) {
      workers_.push_back(std::make_unique<Worker>(this, MakeRequest(options_.model)));
    }
    for (auto& w : workers_) w->Start();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished_ == options_.concurrency; });
  }

  void Report() const {
    std::vector<uint32_t> all;
    uint64_t errors = 0;
    std::string first_error;
    for (const auto& w : workers_) {
      all.insert(all.end(), w->latencies_us.begin(), w->latencies_us.end());
      errors += w->errors;
      if (first_error.empty()) first_error = w->first_error;
    }
    std::sort(all.begin(), all.end());
    auto pct = [&](double p) {
      return all.empty() ? 0u : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
    };
    std::printf(
        "{\"concurrency\": %d, \"requests\": %zu, \"seconds\": %.3f, \"throughput\": %.1f, "
        "\"p50_us\": %u, \"p99_us\": %u, \"errors\": %llu}\n",
        options_.concurrency, all.size(), options_.seconds, all.size() / options_.seconds, pct(0.5),
        pct(0.99), static_cast<unsigned long long>(errors));
    if (errors) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
  }

 private:
  struct Worker {
    Worker(Load* load, inference::ModelInferRequest request)
        : load(load), request(std::move(request)) {}

    void Start() {
      // The previous call's context is released one call later, never inside
      // its own completion callback.
      retired = std::move(context);
      context = std::make_unique<grpc::ClientContext>();
      started = Clock::now();
      load->stub_->async()->ModelInfer(context.get(), &request, &response,
                                       [this](grpc::Status s) { Done(s); });
    }

    void Done(const grpc::Status& s) {
      const auto now = Clock::now();
      if (now >= load->measure_from_ && now < load->measure_to_) {
        if (s.ok()) {
          latencies_us.push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(now - started).count()));
        } else if (errors++ == 0) {
          first_error = s.error_message();
        }
      }
      if (now < load->measure_to_) return Start();  // never blocks: starts the next call
      std::lock_guard<std::mutex> lock(load->mu_);
      if (++load->finished_ == load->options_.concurrency) load->cv_.notify_all();
    }

    Load* load;
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
    std::unique_ptr<grpc::ClientContext> context, retired;
    Clock::time_point started;
    std::vector<uint32_t> latencies_us;
    uint64_t errors = 0;
    std::string first_error;
  };

  const Options options_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  Clock::time_point measure_from_, measure_to_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  int finished_ = 0;  // guarded by mu_
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--target") {
      o.target = value;
    } else if (flag == "--concurrency") {
      o.concurrency = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--seconds") {
      o.seconds = std::atof(value.c_str());
    } else if (flag == "--warmup") {
      o.warmup = std::atof(value.c_str());
    } else if (flag == "--model") {
      o.model = value;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (o.target.empty() || o.seconds <= 0) {
    std::cerr << "usage: bench_grpc_load --target HOST:PORT [--concurrency N] [--seconds S] "
                 "[--warmup S] [--model NAME]\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(o.target, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    std::cerr << "cannot connect to " << o.target << "\n";
    return 1;
  }
  Load load(o, channel);
  load.Run();
  load.Report();
  return 0;
}
