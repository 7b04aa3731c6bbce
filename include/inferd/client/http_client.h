// inferd::client::HttpClient — the KServe v2 HTTP client of libinferclient.
// Inference sends inputs in the binary tensor extension and asks for binary
// outputs. One object is one keep-alive connection (reconnected when the
// server closes it); AsyncInfer uses a second connection owned by one
// background thread, so asynchronous requests complete in order.
//
// Threading: an HttpClient is used by one thread at a time, AsyncInfer
// included (make one client per thread for parallel requests); callbacks run
// on the client's background thread. Errors: returned as ClientStatus, never
// thrown. The destructor waits for queued asynchronous requests.
// TLS (ClientOptions): both connections use one TLS context; a handshake
// failure is an unreachable ClientStatus naming the reason (an untrusted
// certificate, a name mismatch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "inferd/client/client.h"
#include "inferd/client/tensor.h"

namespace inferd::client {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class HttpClient : public Client {
 public:
  // `url` is "host:port"; an "http://" prefix is accepted, and "https://"
  // turns TLS on (as options.tls.enabled does; default port 443).
  explicit HttpClient(const std::string& url, const ClientOptions& options = {});
  ~HttpClient() override;
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  ClientStatus SetupStatus() const override;

  // Raw requests on the keep-alive connection (the options' headers added).
  ClientStatus Get(const std::string& path, HttpResponse& out);
  ClientStatus Post(const std::string& path, const std::string& body,
                    const std::map<std::string, std::string>& headers, HttpResponse& out);

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

  ClientStatus Infer(const InferRequest& request, InferResult& result) override;
  void AsyncInfer(const InferRequest& request, InferCallback done) override;

  // The request path and body of a binary infer request; returns the JSON
  // header size (the Inference-Header-Content-Length value).
  static std::string InferPath(const std::string& model, const std::string& version);
  static size_t BuildInferBody(const InferRequest& request, std::string& body);
  // Decodes an infer response (status, headers, body) into `result`.
  static ClientStatus ParseInferResponse(HttpResponse& response, InferResult& result);

 private:
  class Impl;
  class AsyncWorker;
  ClientStatus GetJson(const std::string& path, std::string& json);
  ClientStatus PostJson(const std::string& path, const std::string& body, std::string* json);

  std::unique_ptr<Impl> impl_;          // endpoint (URL, TLS context, headers), connection
  std::unique_ptr<AsyncWorker> async_;  // started by the first AsyncInfer
};

}  // namespace inferd::client
