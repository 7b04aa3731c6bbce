// inferd::client::Client — the operations both transports of libinferclient
// offer (KServe v2 health, metadata, inference, and the model repository,
// configuration and statistics extensions), so tools can pick HTTP or gRPC
// at run time.
//
// Ownership: results are plain values owned by the caller. Threading: see
// each implementation (HttpClient: one thread at a time; GrpcClient: any
// number of threads). Errors: a transport failure or a server error is a
// non-OK ClientStatus that names it (the server's message included), never
// an exception. Infer() is the exception: a server-side inference error is
// returned in InferResult (ok() false) with an OK ClientStatus, so callers
// can tell "the server said no" from "no answer".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "inferd/client/client_options.h"
#include "inferd/client/tensor.h"

namespace inferd::client {

struct ServerMetadata {
  std::string name;
  std::string version;
  std::vector<std::string> extensions;
};

struct TensorMetadata {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;  // -1: variable
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

struct RepositoryEntry {
  std::string name;
  std::string version;
  std::string state;  // "READY", "UNAVAILABLE", ... (empty when unknown)
  std::string reason;
};

// Called once per asynchronous request, on a client-owned thread; it must
// not block for long (other completions wait behind it).
using InferCallback = std::function<void(ClientStatus, InferResult)>;

class Client {
 public:
  virtual ~Client() = default;

  // Whether the client could be set up from its URL and ClientOptions (a
  // bad header, an unreadable CA, certificate or key file); when not, every
  // call answers this status. Connection problems show on the calls.
  virtual ClientStatus SetupStatus() const = 0;

  virtual ClientStatus ServerLive(bool& live) = 0;
  virtual ClientStatus ServerReady(bool& ready) = 0;
  virtual ClientStatus ModelReady(const std::string& model, const std::string& version,
                                  bool& ready) = 0;
  // `json` (optional) receives the answer as the transport's JSON.
  virtual ClientStatus GetServerMetadata(ServerMetadata& out, std::string* json = nullptr) = 0;
  virtual ClientStatus GetModelMetadata(const std::string& model, const std::string& version,
                                        ModelMetadata& out, std::string* json = nullptr) = 0;
  // The model's configuration, as JSON (HTTP: the server's JSON; gRPC: the
  // ModelConfig message in protobuf's JSON mapping, field names as in the
  // .proto).
  virtual ClientStatus GetModelConfig(const std::string& model, const std::string& version,
                                      std::string& json) = 0;
  // Statistics of one model (or all when `model` is empty), as JSON.
  virtual ClientStatus GetModelStatistics(const std::string& model, const std::string& version,
                                          std::string& json) = 0;
  virtual ClientStatus RepositoryIndex(std::vector<RepositoryEntry>& out,
                                       std::string* json = nullptr) = 0;
  virtual ClientStatus LoadModel(const std::string& model) = 0;
  virtual ClientStatus UnloadModel(const std::string& model) = 0;

  // System shared memory: register the POSIX object `key` (offset,
  // byte_size) under `name`; unregister one name (or all when empty).
  virtual ClientStatus RegisterSystemSharedMemory(const std::string& name, const std::string& key,
                                                  size_t offset, size_t byte_size) = 0;
  virtual ClientStatus UnregisterSystemSharedMemory(const std::string& name) = 0;

  virtual ClientStatus Infer(const InferRequest& request, InferResult& result) = 0;
  // Starts an inference and returns at once; `done` runs when it completes.
  virtual void AsyncInfer(const InferRequest& request, InferCallback done) = 0;
};

// "http" or "grpc"; nullptr with `error` for anything else (or gRPC in a
// build without it).
std::unique_ptr<Client> MakeClient(const std::string& protocol, const std::string& url,
                                   std::string& error);
// The same with TLS and custom headers; also nullptr with `error` when the
// options cannot be used (SetupStatus not ok: the error names the file or
// header).
std::unique_ptr<Client> MakeClient(const std::string& protocol, const std::string& url,
                                   const ClientOptions& options, std::string& error);

}  // namespace inferd::client
