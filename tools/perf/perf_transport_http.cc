#include "inferd/client/http_client.h"
#include "perf_transport.h"

namespace inferd::perf {
namespace {

class HttpTransport : public Transport {
 public:
  HttpTransport(const std::string& url, const client::ClientOptions& options, std::string path,
                std::shared_ptr<const std::string> body, size_t header)
      : http_(url, options), path_(std::move(path)), body_(std::move(body)) {
    headers_ = {{"Inference-Header-Content-Length", std::to_string(header)},
                {"Content-Type", "application/octet-stream"}};
  }
  client::ClientStatus SetupStatus() const { return http_.SetupStatus(); }
  bool Infer(std::string& error) override {
    client::HttpResponse r;
    auto st = http_.Post(path_, *body_, headers_, r);
    if (!st.ok) {
      error = st.message;
      return false;
    }
    if (r.status != 200) {
      error = "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 200);
      return false;
    }
    return true;
  }

 private:
  client::HttpClient http_;
  std::string path_;
  std::shared_ptr<const std::string> body_;
  std::map<std::string, std::string> headers_;
};

}  // namespace

TransportFactory MakeTransportFactory(const std::string& protocol, const std::string& url,
                                      const client::ClientOptions& options,
                                      const client::InferRequest& request, bool streaming) {
  if (protocol == "grpc") return MakeGrpcTransportFactory(url, options, request, streaming);
  auto body = std::make_shared<std::string>();
  const size_t header = client::HttpClient::BuildInferBody(request, *body);
  const std::string path = client::HttpClient::InferPath(request.model, request.version);
  return [url, options, path, body = std::shared_ptr<const std::string>(body),
          header](std::string& error) -> std::unique_ptr<Transport> {
    auto t = std::make_unique<HttpTransport>(url, options, path, body, header);
    if (client::ClientStatus st = t->SetupStatus(); !st.ok) {
      error = st.message;
      return nullptr;
    }
    return t;
  };
}

}  // namespace inferd::perf
