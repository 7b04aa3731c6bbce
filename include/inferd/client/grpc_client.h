// inferd::client::GrpcClient — the KServe v2 gRPC client of libinferclient:
// unary and streaming inference, synchronous and asynchronous (callbacks),
// health, metadata, configuration, repository, statistics and system shared
// memory. No protobuf or gRPC type appears here (pimpl), so users of this
// header need neither the generated code nor gRPC's headers.
//
// Connection reuse: one GrpcClient is one gRPC channel (one HTTP/2
// connection), shared by all its calls, streams and threads.
// Threading: every method may be called from any thread at once. Callbacks
// (AsyncInfer, streams) run on gRPC's threads and must not block for long.
// Errors: ClientStatus messages start with "gRPC <CODE>:". The destructor
// waits for outstanding asynchronous calls; streams must be closed (or
// destroyed) before their client.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "inferd/client/client.h"

namespace inferd::client {

class GrpcClient;

// One ModelStreamInfer stream. Responses (and per-request errors, which the
// server sends without ending the stream) reach `on_response` in order.
class GrpcStream {
 public:
  ~GrpcStream();  // Close() if not closed yet
  GrpcStream(const GrpcStream&) = delete;
  GrpcStream& operator=(const GrpcStream&) = delete;

  // Queues a request on the stream (thread-safe, writes are serialised).
  ClientStatus Send(const InferRequest& request);
  // Half-closes, waits until every response has been delivered, and
  // returns the stream's final status.
  ClientStatus Close();

 private:
  friend class GrpcClient;
  class Impl;
  explicit GrpcStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class GrpcClient : public Client {
 public:
  // `url` is "host:port" (a "grpc://" prefix is accepted) or any gRPC
  // target, such as "xds:///inferd" (inferd-discovery picks the host of
  // each call; $GRPC_XDS_BOOTSTRAP names it). With
  // options.tls.enabled the channel uses TLS (server name override through
  // options.tls.server_name; verify_peer/verify_host do not apply: gRPC
  // always verifies); options.headers go as metadata on every call and
  // stream, names in lower case. Calls about one model (ModelReady,
  // GetModelMetadata, GetModelConfig, GetModelStatistics with a model,
  // Infer, AsyncInfer) also carry `inferd-model: <model>` (routing.h) unless
  // options.headers set that header; repository, shared-memory and server
  // calls do not.
  explicit GrpcClient(const std::string& url, const ClientOptions& options = {});
  ~GrpcClient() override;
  GrpcClient(const GrpcClient&) = delete;
  GrpcClient& operator=(const GrpcClient&) = delete;

  ClientStatus SetupStatus() const override;
  ClientStatus ServerLive(bool& live) override;
  ClientStatus ServerReady(bool& ready) override;
  ClientStatus ModelReady(const std::string& model, const std::string& version,
                          bool& ready) override;
  ClientStatus GetServerMetadata(ServerMetadata& out, std::string* json = nullptr) override;
  ClientStatus GetModelMetadata(const std::string& model, const std::string& version,
                                ModelMetadata& out, std::string* json = nullptr) override;
  ClientStatus GetModelConfig(const std::string& model, const std::string& version,
                              std::string& json) override;
  ClientStatus GetModelStatistics(const std::string& model, const std::string& version,
                                  std::string& json) override;
  ClientStatus RepositoryIndex(std::vector<RepositoryEntry>& out,
                               std::string* json = nullptr) override;
  ClientStatus LoadModel(const std::string& model) override;
  ClientStatus UnloadModel(const std::string& model) override;
  ClientStatus RegisterSystemSharedMemory(const std::string& name, const std::string& key,
                                          size_t offset, size_t byte_size) override;
  ClientStatus UnregisterSystemSharedMemory(const std::string& name) override;

  // A server-side failure (bad input, unknown model) comes back in `result`
  // (status = the gRPC code, error = its message); a failure to reach the
  // server (UNAVAILABLE, DEADLINE_EXCEEDED) as a non-OK ClientStatus.
  ClientStatus Infer(const InferRequest& request, InferResult& result) override;
  void AsyncInfer(const InferRequest& request, InferCallback done) override;
  // Compresses the requests of Infer and AsyncInfer that follow with
  // `algorithm`: "none" (the default), "gzip" or "deflate"; false (nothing
  // changes) for any other name. Responses are compressed as the server
  // chooses. Call it before the requests it is meant for.
  bool SetCompression(const std::string& algorithm);

  // Opens a bidirectional stream on this client's channel. gRPC opens it
  // lazily: a server that cannot be reached shows as a failed Send or a
  // non-OK Close. Metadata is per stream: with `model` (the model every
  // request on the stream names) the stream carries `inferd-model: <model>`
  // and is routed to a host serving it; without, it goes to any host of the
  // fleet (which must then serve every model the stream names).
  std::unique_ptr<GrpcStream> StartStream(InferCallback on_response, const std::string& model = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferd::client
