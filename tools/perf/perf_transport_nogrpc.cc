// Builds of infer-perf without the gRPC client.
#include "perf_transport.h"

namespace inferd::perf {

TransportFactory MakeGrpcTransportFactory(const std::string&, const client::ClientOptions&,
                                          const client::InferRequest&, bool) {
  return {};
}

}  // namespace inferd::perf
