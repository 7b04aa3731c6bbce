#include "frontend/grpc/grpc_server.h"

#include <absl/synchronization/mutex.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "core/log.h"
#include "core/sanitize.h"
#include "frontend/grpc/capped_listener.h"
#include "frontend/grpc/grpc_services.h"

namespace inferd::grpc_frontend {

namespace {

// "host:port", with IPv6 literals bracketed.
std::string HostPort(const std::string& address, int port) {
  const bool ipv6 = address.find(':') != std::string::npos && address.front() != '[';
  return (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// gRPC's millisecond channel arguments are ints; the flags are bounded so
// (at most 86400 s, command_line.cc) so that this cannot overflow.
int SecondsToMs(int secs) { return secs * 1000; }

// Protobuf logs an ERROR line for every message with invalid UTF-8 in a
// string field while parsing it: with gRPC parsing client requests, any
// client could fill the log with one line per request (found by
// fuzz/grpc_infer_fuzz). The call itself fails with an error status, so
// those lines are dropped; protobuf's other messages go to stderr with
// control characters escaped.
void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  if (message.find("invalid UTF-8") != std::string::npos) return;
  const bool error = level >= google::protobuf::LOGLEVEL_ERROR;
  const LogLevel at = error                                         ? LogLevel::kError
                      : level == google::protobuf::LOGLEVEL_WARNING ? LogLevel::kWarning
                                                                    : LogLevel::kInfo;
  const std::string where = std::string(file ? file : "") + ":" + std::to_string(line) + ": ";
  // The text formats keep the line this always was.
  LogPassOn(at, "protobuf", "protobuf " + where + (error ? "error: " : "") + EscapeControl(message),
            where + message);
}

// Reads a PEM file named by `flag`; the error names the flag and the path,
// never the contents.
StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    return InvalidArgument(flag + ": cannot read '" + path + "'");
  }
  return text.str();
}

// Server credentials for the TLS options (insecure when TLS is off).
StatusOr<std::shared_ptr<::grpc::ServerCredentials>> MakeCredentials(const TlsOptions& tls) {
  if (!tls.enabled) return ::grpc::InsecureServerCredentials();
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return InvalidArgument("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key");
  }
  if (tls.mutual && tls.root_file.empty()) {
    return InvalidArgument("--grpc-use-ssl-mutual needs --grpc-root-cert");
  }
  auto cert = ReadPem("--grpc-server-cert", tls.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadPem("--grpc-server-key", tls.key_file);
  if (!key.ok()) return key.status();
  ::grpc::SslServerCredentialsOptions options(
      tls.mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                 : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!tls.root_file.empty()) {
    auto root = ReadPem("--grpc-root-cert", tls.root_file);
    if (!root.ok()) return root.status();
    options.pem_root_certs = std::move(*root);
  }
  options.pem_key_cert_pairs.push_back({std::move(*key), std::move(*cert)});
  return ::grpc::SslServerCredentials(options);
}

}  // namespace

class GrpcServer::Impl {
 public:
  Impl(InferenceServer& server, Options options)
      : options_(std::move(options)), service_(server, streams_), health_(server) {
    service_.Restrict(options_.restricted);
    health_.Restrict(options_.restricted);
  }

  ~Impl() { Shutdown(std::chrono::system_clock::now()); }

  Status Start() {
    // Debian builds abseil without NDEBUG, so every absl::Mutex inside gRPC
    // would record lock order in one process-wide graph (deadlock detection,
    // a debugging aid) on each acquisition. Release builds of abseil skip it;
    // so does inferd. Process-wide; inferd's own code uses std::mutex.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    google::protobuf::SetLogHandler(&ProtobufLog);  // process-wide, like the line above
    const std::string where = HostPort(options_.address, options_.port);
    auto credentials = MakeCredentials(options_.tls);
    if (!credentials.ok()) return credentials.status();
    ::grpc::ServerBuilder builder;
    std::unique_ptr<::grpc::experimental::ExternalConnectionAcceptor> acceptor;
    if (options_.max_connections > 0) {
      // inferd accepts, counts and hands connections over (capped_listener.h).
      auto listener =
          CappedListener::Bind(options_.address, options_.port, options_.max_connections);
      if (!listener.ok()) return listener.status();
      listener_ = std::move(*listener);
      acceptor = builder.experimental().AddExternalConnectionAcceptor(
          ::grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, *credentials);
    } else {
      builder.AddListeningPort(where, *credentials, &port_);
    }
    Configure(builder);
    server_ = builder.BuildAndStart();
    if (listener_ && server_) {
      acceptor_ = std::move(acceptor);
      port_ = listener_->port();
      listener_->Start(acceptor_.get());
    }
    if (!server_ || port_ == 0) {
      server_.reset();
      listener_.reset();
      port_ = 0;
      return Unavailable("gRPC: failed to listen on " + where +
                         " (address in use or not available?)");
    }
    return Status::Ok();
  }

  // Message limits, HTTP/2 and keepalive settings, the services.
  void Configure(::grpc::ServerBuilder& builder) {
    builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
    builder.SetMaxSendMessageSize(options_.max_message_bytes);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               SecondsToMs(options_.idle_timeout_secs));
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               SecondsToMs(options_.handshake_timeout_secs));
    // Never share the port with another process (Triton: --reuse-grpc-port=false).
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options_.keepalive_time_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options_.keepalive_timeout_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                               options_.keepalive_permit_without_calls ? 1 : 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA,
                               options_.http2_max_pings_without_data);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                               options_.http2_min_recv_ping_interval_without_data_ms);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, options_.http2_max_ping_strikes);
    // Compressed requests (gzip, deflate) are accepted: every algorithm gRPC
    // knows is enabled by default, and none is disabled here.
    builder.RegisterService(&service_);
    builder.RegisterService(&health_);
  }

  int port() const { return port_; }

  void Shutdown(std::chrono::system_clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
    // No new connections from here on; those handed over are gRPC's.
    if (listener_) listener_->Stop();
    if (server_) {
      streams_.WindDownAll();
      server_->Shutdown(deadline);  // waits for calls; cancels those left at the deadline
      streams_.WaitUntilEmpty();    // every stream reactor has seen OnDone
    }
    server_.reset();
  }

 private:
  const Options options_;
  // Destroyed in reverse order: the gRPC server first, then what its calls use.
  StreamRegistry streams_;
  InferenceService service_;
  HealthService health_;
  // With --grpc-max-connections: inferd's listening socket, and the acceptor
  // it hands connections to (valid while server_ is).
  std::unique_ptr<CappedListener> listener_;
  std::unique_ptr<::grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::unique_ptr<::grpc::Server> server_;
  int port_ = 0;
  std::mutex shutdown_mu_;
  bool shut_down_ = false;  // guarded by shutdown_mu_
};

GrpcServer::GrpcServer(InferenceServer& server, Options options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

GrpcServer::~GrpcServer() = default;

Status GrpcServer::Start() { return impl_->Start(); }

int GrpcServer::port() const { return impl_->port(); }

void GrpcServer::Shutdown(std::chrono::system_clock::time_point deadline) {
  impl_->Shutdown(deadline);
}

}  // namespace inferd::grpc_frontend
