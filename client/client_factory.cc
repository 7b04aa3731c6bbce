#include "inferd/client/client.h"
#include "inferd/client/http_client.h"
#ifdef INFERD_CLIENT_WITH_GRPC
#include "inferd/client/grpc_client.h"
#endif

namespace inferd::client {

std::unique_ptr<Client> MakeClient(const std::string& protocol, const std::string& url,
                                   std::string& error) {
  return MakeClient(protocol, url, ClientOptions{}, error);
}

std::unique_ptr<Client> MakeClient(const std::string& protocol, const std::string& url,
                                   const ClientOptions& options, std::string& error) {
  std::unique_ptr<Client> client;
  if (protocol == "http") client = std::make_unique<HttpClient>(url, options);
#ifdef INFERD_CLIENT_WITH_GRPC
  if (protocol == "grpc") client = std::make_unique<GrpcClient>(url, options);
#else
  if (protocol == "grpc") {
    error = "this build has no gRPC client";
    return nullptr;
  }
#endif
  if (!client) {
    error = "unknown protocol '" + protocol + "' (http or grpc)";
    return nullptr;
  }
  if (ClientStatus st = client->SetupStatus(); !st.ok) {
    error = st.message;
    return nullptr;
  }
  return client;
}

}  // namespace inferd::client
