// inferd::client::HttpClient — a small synchronous KServe v2 HTTP client
// (part of libinferclient). One object is one keep-alive connection; it
// reconnects when the server closes it.
//
// Threading: an HttpClient is used by one thread at a time; make one per
// thread for concurrency. Errors: transport failures are returned as a
// non-OK ClientStatus, never thrown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inferd::client {

struct ClientStatus {
  bool ok = true;
  std::string message;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// An input tensor in binary form (little-endian, row-major; BYTES elements
// length-prefixed).
struct Tensor {
  std::string name;
  std::string datatype;  // "FP32", "INT32", "BYTES", ...
  std::vector<int64_t> shape;
  std::string data;
};

struct InferResult {
  int status = 0;               // HTTP status
  std::string error;            // the server's message when status != 200
  std::string json;             // the response's JSON header
  std::vector<Tensor> outputs;  // binary outputs, in response order
};

class HttpClient {
 public:
  // `url` is "host:port" (an "http://" prefix is accepted).
  explicit HttpClient(const std::string& url);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  ClientStatus Get(const std::string& path, HttpResponse& out);
  ClientStatus Post(const std::string& path, const std::string& body,
                    const std::map<std::string, std::string>& headers, HttpResponse& out);

  // Infers with binary inputs; outputs are requested in binary form (all of
  // them when `outputs` is empty). Decodes the binary outputs.
  ClientStatus Infer(const std::string& model, const std::string& version,
                     const std::vector<Tensor>& inputs, const std::vector<std::string>& outputs,
                     InferResult& result, const std::string& request_id = "");

  // Builds the body of a binary infer request; returns the JSON header size.
  static size_t BuildInferBody(const std::vector<Tensor>& inputs,
                               const std::vector<std::string>& outputs,
                               const std::string& request_id, std::string& body);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferd::client
