// GrpcServer: the KServe v2 gRPC front end (inference.GRPCInferenceService
// and grpc.health.v1.Health) on gRPC's callback API.
//
// This header names no gRPC or protobuf type (the implementation is behind a
// pointer), so the rest of the tree can include it without generated code.
//
// Threading: the calls run on gRPC's own callback threads, which decode,
// validate, enqueue and encode. A model runs on them only inline: a request
// that finds its model's queue empty and an instance idle runs on the calling
// thread when the model's executions are short (docs/decisions.md, "Inline
// execution"); otherwise inference responses are written from the model
// instance thread that completes the request. Repository load/unload and CUDA
// registration (slow) run on the control plane's worker thread, owned by the
// InferenceServer. Start, port and Shutdown are called from one thread (main).
#pragma once

#include <chrono>
#include <climits>
#include <memory>
#include <string>

#include "core/status.h"
#include "frontend/restricted_api.h"
#include "frontend/tls_options.h"
#include "server/inference_server.h"

namespace inferd::grpc_frontend {

class GrpcServer {
 public:
  // Triton's flag names and defaults (times in milliseconds).
  struct Options {
    std::string address = "0.0.0.0";
    int port = 8001;  // 0: pick a free port (port() says which)
    // Largest message in each direction (--grpc-max-message-size); gRPC
    // applies it to a compressed request after decompression too. Triton
    // fixes it at INT32_MAX; inferd's default is the HTTP body limit.
    int max_message_bytes = 64 << 20;
    // HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS per connection
    // (--grpc-max-concurrent-streams).
    int max_concurrent_streams = 128;
    // Most open connections (--grpc-max-connections; 0: no limit). With a
    // limit, inferd accepts TCP connections itself and hands each to gRPC
    // (with the same credentials, so TLS works alike); a connection beyond
    // the limit is closed at accept, before its TLS handshake, and the
    // client's call fails UNAVAILABLE. A connection counts until either
    // side closes it.
    int max_connections = 0;
    // A connection with no call in flight for this long is closed with a
    // GOAWAY (--grpc-idle-timeout-secs; clients reconnect on their next
    // call). A connection that has not finished its TLS handshake and sent
    // its HTTP/2 preface and SETTINGS within handshake_timeout_secs is
    // dropped (--grpc-handshake-timeout-secs). These bound how long one
    // that does nothing holds a descriptor (docs/security.md);
    // max_connections bounds how many there are.
    int idle_timeout_secs = 60;
    int handshake_timeout_secs = 10;
    int keepalive_time_ms = 7200000;                            // --grpc-keepalive-time
    int keepalive_timeout_ms = 20000;                           // --grpc-keepalive-timeout
    bool keepalive_permit_without_calls = false;                // ...-permit-without-calls
    int http2_max_pings_without_data = 2;                       // ...-max-pings-without-data
    int http2_min_recv_ping_interval_without_data_ms = 300000;  // ...-without-data
    int http2_max_ping_strikes = 2;                             // ...-max-ping-strikes
    TlsOptions tls;                   // --grpc-use-ssl, --grpc-server-cert, ... (docs/security.md)
    RestrictedApis restricted{true};  // --grpc-restricted-protocol
  };

  // `server` must outlive this object.
  GrpcServer(InferenceServer& server, Options options);
  // Shuts down at once if still running.
  ~GrpcServer();

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds address:port and starts serving. UNAVAILABLE if the address cannot
  // be bound (the port is never shared with another process: SO_REUSEPORT is
  // off, as Triton's --reuse-grpc-port=false).
  Status Start();

  // The bound port (the chosen one when Options::port was 0); 0 before Start.
  int port() const;

  // Stops accepting calls, asks open ModelStreamInfer streams to finish (each
  // stops reading, writes the responses it owes, then ends with UNAVAILABLE),
  // lets in-flight calls complete until `deadline`, then cancels the rest.
  // Blocks until every call is done. Call it before InferenceServer::Stop:
  // in-flight inferences need their models to complete, and queued
  // load/unload calls the control plane's worker. Idempotent.
  void Shutdown(std::chrono::system_clock::time_point deadline);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferd::grpc_frontend
