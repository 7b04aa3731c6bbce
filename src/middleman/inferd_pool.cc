#include "middleman/inferd_pool.h"

#include <grpcpp/support/client_interceptor.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace inferd::middleman {

namespace {
constexpr auto kSweepInterval = std::chrono::milliseconds(5);

using ::grpc::experimental::ClientInterceptorFactoryInterface;
using ::grpc::experimental::ClientRpcInfo;
using ::grpc::experimental::InterceptionHookPoints;

// Adds the pool's metadata to every call's initial metadata. An interceptor
// rather than ClientContext::AddMetadata at each call site, so that calls
// made on NextStub() by other classes carry it too.
class MetadataInterceptor : public ::grpc::experimental::Interceptor {
 public:
  explicit MetadataInterceptor(const std::vector<std::pair<std::string, std::string>>* metadata)
      : metadata_(metadata) {}
  void Intercept(::grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      auto* md = methods->GetSendInitialMetadata();
      for (const auto& [key, value] : *metadata_) md->emplace(key, value);
    }
    methods->Proceed();
  }

 private:
  const std::vector<std::pair<std::string, std::string>>* metadata_;  // the pool's options
};

class MetadataInterceptorFactory : public ClientInterceptorFactoryInterface {
 public:
  explicit MetadataInterceptorFactory(
      const std::vector<std::pair<std::string, std::string>>* metadata)
      : metadata_(metadata) {}
  ::grpc::experimental::Interceptor* CreateClientInterceptor(ClientRpcInfo*) override {
    return new MetadataInterceptor(metadata_);
  }

 private:
  const std::vector<std::pair<std::string, std::string>>* metadata_;
};

Status ReadPem(const std::string& path, const std::string& what, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return InvalidArgument("cannot read the " + what + " file '" + path +
                           "': " + std::strerror(errno));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  if (out.find("-----BEGIN ") == std::string::npos)
    return InvalidArgument("the " + what + " file '" + path + "' is not PEM");
  return Status();
}

}  // namespace

StatusOr<std::shared_ptr<::grpc::ChannelCredentials>> InferdTlsCredentials(
    const InferdTlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty())
    return InvalidArgument("a client certificate and its private key go together");
  ::grpc::SslCredentialsOptions ssl;
  if (!files.ca_file.empty())
    INFERD_RETURN_IF_ERROR(ReadPem(files.ca_file, "CA", ssl.pem_root_certs));
  if (!files.cert_file.empty()) {
    INFERD_RETURN_IF_ERROR(ReadPem(files.cert_file, "client certificate", ssl.pem_cert_chain));
    INFERD_RETURN_IF_ERROR(ReadPem(files.key_file, "private key", ssl.pem_private_key));
  }
  return ::grpc::SslCredentials(ssl);
}

Status ParseInferdHeader(std::string_view spec, std::pair<std::string, std::string>& out) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return InvalidArgument("header '" + std::string(spec) + "' is not 'name: value'");
  std::string name(spec.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool name_ok = std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.';
  });
  if (!name_ok) return InvalidArgument("header name '" + name + "' is not [0-9a-z_.-]");
  if (name.rfind("grpc-", 0) == 0 || name == "te" || name == "content-type" ||
      name == "user-agent" || (name.size() > 4 && name.ends_with("-bin"))) {
    return InvalidArgument("header '" + name + "' cannot be set as gRPC metadata");
  }
  std::string_view value = spec.substr(colon + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (!std::all_of(value.begin(), value.end(),
                   [](unsigned char c) { return c >= 0x20 && c <= 0x7e; })) {
    return InvalidArgument("the value of header '" + name + "' is not printable ASCII");
  }
  out = {std::move(name), std::string(value)};
  return Status();
}

InferdPool::InferdPool(InferdPoolOptions options, MetricsRegistry* metrics)
    : options_(std::move(options)), metrics_(metrics) {
  for (const auto& [key, value] : options_.metadata)
    metadata_sets_model_ = metadata_sets_model_ || key == client::kModelHeader;
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
    if (!options_.tls_server_name.empty()) args.SetSslTargetNameOverride(options_.tls_server_name);
    auto credentials =
        options_.credentials ? options_.credentials : ::grpc::InsecureChannelCredentials();
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> interceptors;
    if (!options_.metadata.empty())
      interceptors.push_back(std::make_unique<MetadataInterceptorFactory>(&options_.metadata));
    channels_.push_back(::grpc::experimental::CreateCustomChannelWithInterceptors(
        options_.url, credentials, args, std::move(interceptors)));
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

void InferdPool::AddRoutingMetadata(::grpc::ClientContext& context, std::string_view model) const {
  if (!metadata_sets_model_ && client::IsRoutableModelName(model))
    context.AddMetadata(client::kModelHeader, std::string(model));
}

void InferdPool::StartClientSpan(CallBase& call, const TraceSpan& parent,
                                 std::string_view rpc) const {
  const std::string service = "inference.GRPCInferenceService";
  call.span = parent.StartChild(service + "/" + std::string(rpc.empty() ? "call" : rpc),
                                trace::SpanKind::kClient);
  call.span->SetAttribute("rpc.system", std::string("grpc"));
  call.span->SetAttribute("rpc.service", service);
  call.span->SetAttribute("rpc.method", std::string(rpc));
  call.span->SetAttribute("server.address", options_.url);
  // The client span is the parent inferd's spans name; the tracestate goes
  // on unchanged.
  call.context.AddMetadata("traceparent", call.span->traceparent());
  if (!call.span->tracestate().empty()) {
    call.context.AddMetadata("tracestate", call.span->tracestate());
  }
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
  if (call.span) {
    call.span->SetAttribute("rpc.grpc.status_code", static_cast<int64_t>(status.error_code()));
    if (!status.ok()) call.span->SetError(status.error_message());
    call.span->End();
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
