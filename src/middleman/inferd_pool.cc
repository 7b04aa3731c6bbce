#include "middleman/inferd_pool.h"

namespace inferd::middleman {

namespace {
constexpr auto kSweepInterval = std::chrono::milliseconds(5);
}

InferdPool::InferdPool(InferdPoolOptions options, MetricsRegistry* metrics)
    : options_(std::move(options)), metrics_(metrics) {
  const int n = std::max(1, options_.channels);
  for (int i = 0; i < n; ++i) {
    ::grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options_.max_message_bytes);
    args.SetMaxSendMessageSize(options_.max_message_bytes);
    // Distinct arguments keep gRPC from sharing one subchannel (one TCP
    // connection) between the pool's channels.
    args.SetInt("inferd.middleman.channel", i);
    // Reconnect quickly once inferd is back (the default backoff grows to 2 min).
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    channels_.push_back(
        ::grpc::CreateCustomChannel(options_.url, ::grpc::InsecureChannelCredentials(), args));
    stubs_.push_back(inference::GRPCInferenceService::NewStub(channels_.back()));
  }
  sweeper_ = std::thread([this] { Sweep(); });
}

InferdPool::~InferdPool() {
  Shutdown();
  sweeper_.join();
}

void InferdPool::Shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  for (CallBase* c : calls_) c->context.TryCancel();
  idle_.wait(lock, [&] { return calls_.empty(); });
  lock.unlock();
  work_.notify_all();
}

InferdStub& InferdPool::NextStub() {
  return *stubs_[next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()];
}

int64_t InferdPool::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(calls_.size());
}

void InferdPool::Begin(CallBase& call, const CallOptions& options) {
  call.context.set_deadline(options.deadline == std::chrono::system_clock::time_point{}
                                ? std::chrono::system_clock::now() + options_.default_timeout
                                : options.deadline);
  call.cancelled = options.cancelled;
  call.start = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  call.pos = calls_.insert(calls_.end(), &call);
  if (stopping_) call.context.TryCancel();
  if (calls_.size() == 1) work_.notify_one();  // the sweeper sleeps while none are
}

void InferdPool::End(CallBase& call, const ::grpc::Status& status) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - call.start).count();
  if (metrics_ != nullptr) {
    metrics_
        ->counter("middleman_inferd_calls_total", "Calls to inferd, by gRPC status code",
                  {{"code", std::to_string(static_cast<int>(status.error_code()))}})
        .Add();
    metrics_
        ->histogram("middleman_inferd_call_duration_seconds",
                    "Time from starting a call to inferd to its answer")
        .Observe(seconds);
  }
  std::lock_guard<std::mutex> lock(mu_);
  calls_.erase(call.pos);
  if (calls_.empty()) idle_.notify_all();
}

void InferdPool::Sweep() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    for (CallBase* c : calls_) {
      if (c->cancelled && c->cancelled->load(std::memory_order_relaxed)) c->context.TryCancel();
    }
    // Asleep while nothing cancellable is in flight; a short poll otherwise
    // (the flags are plain atomics that their owners set without telling).
    if (calls_.empty()) {
      work_.wait(lock);
    } else {
      work_.wait_for(lock, kSweepInterval);
    }
  }
}

}  // namespace inferd::middleman
