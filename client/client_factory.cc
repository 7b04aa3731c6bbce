#include "inferd/client/client.h"
#include "inferd/client/http_client.h"
#ifdef INFERD_CLIENT_WITH_GRPC
#include "inferd/client/grpc_client.h"
#endif

namespace inferd::client {

std::unique_ptr<Client> MakeClient(const std::string& protocol, const std::string& url,
                                   std::string& error) {
  if (protocol == "http") return std::make_unique<HttpClient>(url);
#ifdef INFERD_CLIENT_WITH_GRPC
  if (protocol == "grpc") return std::make_unique<GrpcClient>(url);
#else
  if (protocol == "grpc") {
    error = "this build has no gRPC client";
    return nullptr;
  }
#endif
  error = "unknown protocol '" + protocol + "' (http or grpc)";
  return nullptr;
}

}  // namespace inferd::client
